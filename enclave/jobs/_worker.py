"""The worker loop: N threads claiming jobs, a heartbeat beside each running job.

Invariants:

1. A thread holds at most one lease. While its job runs, a heartbeat thread extends the
   lease every third of ``lease_seconds``; if a heartbeat is rejected (the lease was
   taken over or the audit cancelled) the job's own commit will be rejected too.
2. A lost lease is not an error of the worker: the attempt is dropped and logged.
3. ``stop`` ends the loop between jobs; a job in progress finishes (or its lease lapses
   if the process dies, and another worker takes it over).
4. Every thread opens its own ``Runtime`` through ``runtime_factory`` (its own
   database connections); the clock is the runtime's, read here at the edge only.
5. Logs carry job ids, kinds, attempt numbers and error codes: never content.
6. With ``zygote`` (the default) every thread keeps its own zygotes
   (``enclave.sandbox.Zygotes``): a job's isolated workers are forked from a sandboxed,
   pre-imported process instead of starting an interpreter each; they are closed when
   the thread ends. Jobs of one thread run one after another, so a zygote serves one
   job at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ledger import Conflict, LedgerError

from .._errors import EnclaveError
from .._runtime import Runtime
from ..replay.stages import WORKER_HANDLER
from ..sandbox import Sandbox, SandboxLimits, Zygotes
from ._conclusions import ledger_clock
from ._execute import StageOptions, execute
from ._model import ClaimedJob
from ._queue import claim, heartbeat, reap

__all__ = ["WorkerStats", "prewarm", "run_worker"]

log = logging.getLogger("enclave.jobs")
_REAP_EVERY_SECONDS = 1.0


@dataclass
class WorkerStats:
    """Counts of what the worker's threads did (``lost``: commits rejected by fencing)."""

    done: int = 0
    retried: int = 0
    failed: int = 0
    lost: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, outcome: str) -> None:
        name = {"done": "done", "queued": "retried", "failed": "failed", "dead": "failed"}.get(
            outcome, "lost"
        )
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def to_dict(self) -> dict[str, int]:
        return {
            "done": self.done,
            "retried": self.retried,
            "failed": self.failed,
            "lost": self.lost,
        }


def _heartbeats(
    runtime: Runtime, job: ClaimedJob, lease_seconds: int, finished: threading.Event
) -> None:
    interval = max(lease_seconds / 3.0, 0.05)
    while not finished.wait(interval):
        try:
            heartbeat(
                runtime.ledger.engine,
                job.job_id,
                job.fencing_token,
                now=runtime.clock(),
                lease_seconds=lease_seconds,
            )
        except Conflict:
            log.warning(
                "job %s: lease lost (fencing token %d is stale)", job.job_id, job.fencing_token
            )
            return
        except LedgerError as exc:
            log.warning("job %s: heartbeat failed (%s)", job.job_id, type(exc).__name__)


def _run_one(runtime: Runtime, job: ClaimedJob, options: StageOptions, stats: WorkerStats) -> None:
    log.info(
        "job %s (%s, audit %s) attempt %d: claimed by %s",
        job.job_id,
        job.kind,
        job.audit_id,
        job.attempts,
        job.lease_owner,
    )
    finished = threading.Event()
    beat = threading.Thread(
        target=_heartbeats,
        args=(runtime, job, options.lease_seconds, finished),
        name=f"heartbeat-{job.job_id}",
        daemon=True,
    )
    beat.start()
    try:
        outcome = execute(runtime, job, clock=runtime.clock, options=options)
    except Conflict:
        log.warning(
            "job %s attempt %d: commit rejected (fencing token %d is stale)",
            job.job_id,
            job.attempts,
            job.fencing_token,
        )
        outcome = "lost"
    except LedgerError as exc:  # the failure could not be recorded: the lease will lapse
        log.warning("job %s attempt %d: %s", job.job_id, job.attempts, type(exc).__name__)
        outcome = "lost"
    finally:
        finished.set()
        beat.join()
    stats.add(outcome)
    log.info("job %s attempt %d: %s", job.job_id, job.attempts, outcome)


def prewarm(zygotes: Zygotes, runtime: Runtime, options: StageOptions) -> None:
    """Start the zygotes a replay stage's sandbox forks from before the first claim
    (the same start parameters as the stages' own sandbox; any other key starts its
    zygotes on first use). A failure leaves it to the jobs, which report it."""
    try:
        sandbox = Sandbox(
            scratch_root=runtime.home.root / "scratch",
            limits=options.limits,
            isolation=options.isolation,
        )
        zygotes.prewarm(sandbox, WORKER_HANDLER, (WORKER_HANDLER.partition(":")[0],))
    except (EnclaveError, OSError) as exc:
        log.warning("zygotes not started ahead (%s)", type(exc).__name__)


def _loop(
    runtime_factory: Callable[[], Runtime],
    *,
    worker_id: str,
    stop: threading.Event,
    options: StageOptions,
    poll_seconds: float,
    once: bool,
    kinds: Sequence[str] | None,
    stats: WorkerStats,
    zygote: bool,
) -> None:
    runtime = runtime_factory()
    recorded_clock = ledger_clock(runtime.ledger)
    reaped_at = float("-inf")
    zygotes = Zygotes()
    if zygote:
        prewarm(zygotes, runtime, options)
    log.info("worker %s: claiming", worker_id)
    try:
        while not stop.is_set():
            try:
                if time.monotonic() - reaped_at >= _REAP_EVERY_SECONDS:
                    reaped_at = time.monotonic()
                    engine, now = runtime.ledger.engine, runtime.clock()
                    failed = reap(engine, now=now, recorded_clock=recorded_clock)
                    for audit_id in failed:
                        log.warning("audit %s failed: a job ran out of attempts", audit_id)
                job = claim(
                    runtime.ledger.engine,
                    worker_id=worker_id,
                    now=runtime.clock(),
                    lease_seconds=options.lease_seconds,
                    kinds=kinds,
                )
            except LedgerError as exc:
                log.warning("worker %s: queue unavailable (%s)", worker_id, type(exc).__name__)
                stop.wait(poll_seconds)
                continue
            if job is None:
                if once:
                    return
                stop.wait(poll_seconds)
                continue
            if zygote:
                with zygotes.activated():
                    _run_one(runtime, job, options, stats)
            else:
                _run_one(runtime, job, options, stats)
    finally:
        zygotes.close()
        runtime.close()


def run_worker(
    runtime_factory: Callable[[], Runtime],
    *,
    worker_id: str,
    concurrency: int = 1,
    stop: threading.Event,
    lease_seconds: int = 60,
    poll_seconds: float = 0.2,
    once: bool = False,
    isolation: str = "auto",
    limits: SandboxLimits | None = None,
    kinds: Sequence[str] | None = None,
    zygote: bool = True,
) -> WorkerStats:
    """Claim and run jobs on ``concurrency`` threads until ``stop`` is set.

    With ``once`` each thread returns as soon as it finds nothing to claim. With
    ``zygote`` jobs' isolated workers are forked from per-thread zygotes (invariant 6).
    """
    if isinstance(concurrency, bool) or not 1 <= concurrency <= 64:
        raise ValueError("concurrency must lie in 1..64")
    if isinstance(lease_seconds, bool) or not 1 <= lease_seconds <= 86_400:
        raise ValueError("lease_seconds must lie in 1..86400")
    # bounded above: a wait past what the clock can represent killed the thread on its
    # first empty poll, and the worker then returned as if it had finished
    if not 0 < poll_seconds <= 3_600:
        raise ValueError("poll_seconds must lie in (0, 3600]")
    if not worker_id:
        raise ValueError("worker_id must be non-empty")
    options = StageOptions(lease_seconds=lease_seconds, isolation=isolation, limits=limits)
    stats = WorkerStats()
    threads = [
        threading.Thread(
            target=_loop,
            args=(runtime_factory,),
            kwargs={
                "worker_id": worker_id if concurrency == 1 else f"{worker_id}/{n}",
                "stop": stop,
                "options": options,
                "poll_seconds": poll_seconds,
                "once": once,
                "kinds": kinds,
                "stats": stats,
                "zygote": zygote,
            },
            name=f"worker-{worker_id}-{n}",
        )
        for n in range(concurrency)
    ]
    log.info("worker %s: started with %d thread(s)", worker_id, concurrency)
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # short joins keep the main thread responsive to signals
            thread.join(0.2)
    return stats
