"""Isolated worker processes for replayed agent code (invariant 2: replay never
goes live).

A :class:`Sandbox` starts one long-lived worker per replay job; the worker runs a
handler ``"package.module:function"`` (``function(request: dict) -> dict``) behind
an audit-hook tripwire, rlimits, a seccomp filter and an OS isolation layer
(bubblewrap, else a network namespace). Any attempt to go live, any broken
limit and any handler failure raises :class:`Contaminated` with a stable reason
code, and the handle refuses further calls.
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
