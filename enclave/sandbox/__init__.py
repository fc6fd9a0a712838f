"""Isolated worker processes for replayed agent code (invariant 2: replay never
goes live).

A :class:`Sandbox` starts one long-lived worker per replay job; the worker runs a
handler ``"package.module:function"`` (``function(request: dict) -> dict``) inside
bubblewrap (a minimal read-only view, every namespace, an unprivileged uid, no
capabilities, a size-capped tmpfs scratch), under Landlock, a default-deny seccomp
filter and rlimits, with an audit-hook tripwire as a diagnostic. Without bubblewrap a
sandbox refuses (:class:`SandboxUnavailable`) unless ``UNSAFE_development`` is asked
for by name. Any attempt to go live, any broken limit and any handler failure raises
:class:`Contaminated` with a stable reason code, and the handle refuses further calls.

``Sandbox.environment`` / ``WorkerHandle.environment`` is what a certificate may
state: ``isolation`` (``"bwrap"`` or ``"development — not an enclave"``), ``enclave``,
``verified``, ``layers_in_force`` (only layers the supervisor checked), ``enforced``
(what each did), ``diagnostics`` (``["audit_hook"]``), ``seccomp``, ``rlimits`` and
``wall_seconds``.
"""

from enclave.sandbox._errors import Contaminated, SandboxUnavailable, WorkerClosed
from enclave.sandbox._handle import WorkerHandle
from enclave.sandbox._limits import REASONS, SandboxLimits
from enclave.sandbox._supervisor import Sandbox

__all__ = [
    "REASONS",
    "Contaminated",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "WorkerClosed",
    "WorkerHandle",
]
