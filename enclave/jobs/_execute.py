"""Running one claimed job: the audit stage it names, then its fenced commit.

Each kind, as numbered in ``_lifecycle``:

1. ``audit``: audit ``RUNNING``; ``prepare_audit``; commit the ``Preparation`` together
   with the replay jobs (idempotency keys ``<audit>:replay:<n>``) and the finalize job
   (``<audit>:finalize``, held back until the last replay job is done).
2. ``replay``: ``run_sample_batch`` on the job's assigned seeds; commit the
   ``BatchResult``, advance progress and, if it was the last one, release finalize.
3. ``finalize``: audit ``FINALIZING``; check lineage (the preparation and every batch
   present, each batch's seeds exactly its assigned seeds, together exactly
   S..S+N-1); ``finalize_audit`` at the issue time fixed on first run (so a re-delivered
   finalizer signs the same statement); commit ``COMPLETED`` with the certificate, or
   ``FAILED`` with the safe failure code. The audit row moves to a terminal status
   with a conditional update, once.

Errors: ``Conflict`` (the lease was lost) propagates and nothing is committed. Each
other error says whether the job may be tried again (``retryable``, see
``ledger.ErrorOutcome``): one that may not (bad input, a refusal, an integrity or an
agent failure, the certificate verifier's errors) is permanent and the audit fails
closed with the error's code. The rest, and any exception no class speaks for, are
retried until the job's attempts run out, then the job is dead and the audit fails
closed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger import TERMINAL_AUDIT_STATES, AuditState, Conflict, LedgerError, NotFound
from ledger.tables import AuditRow, JobRow, table_of
from ledger.transactions import read

from .._errors import EnclaveError, IntegrityFailure
from .._runtime import Runtime
from ..keys import GrantSource
from ..replay import AuditOutcome, AuditRequest
from ..replay.stages import (
    BatchResult,
    Preparation,
    finalize_audit,
    prepare_audit,
    run_sample_batch,
)
from ..sandbox import SandboxLimits
from ._conclusions import ledger_clock
from ._fencing import FencedLedger
from ._model import (
    NEVER,
    ClaimedJob,
    dumps,
    loads_object,
    parse_time,
    stamp,
)
from ._queue import complete, enqueue, fail, fenced

audits, jobs = table_of(AuditRow), table_of(JobRow)

__all__ = ["StageOptions", "execute", "issue_time", "lineage"]

log = logging.getLogger("enclave.jobs")
FAILED = "failed"  # the classification finalize_audit gives a failed audit


@dataclasses.dataclass(frozen=True, kw_only=True)
class StageOptions:
    lease_seconds: int = 60
    isolation: str = "auto"
    limits: SandboxLimits | None = None


Clock = Callable[[], datetime]


def _request(engine: Engine, audit_id: str) -> AuditRequest:
    with read(engine) as conn:
        row = conn.execute(sa.select(audits.c.request_json).where(audits.c.id == audit_id)).first()
    if row is None:
        raise NotFound("no such audit")
    return AuditRequest.from_dict(loads_object(row[0]))


def _move(
    engine: Engine,
    job: ClaimedJob,
    status: AuditState,
    sources: tuple[AuditState, ...],
    now: datetime,
) -> None:
    with fenced(engine, job.job_id, job.fencing_token) as conn:
        conn.execute(
            sa.update(audits)
            .where(audits.c.id == job.audit_id, audits.c.status.in_(sources))
            .values(status=status, updated_at=stamp(now))
        )


def _audit_job(
    rt: Runtime, job: ClaimedJob, request: AuditRequest, clock: Clock, opts: StageOptions
) -> None:
    engine = rt.ledger.engine
    _move(engine, job, AuditState.RUNNING, (AuditState.QUEUED,), clock())
    prep = prepare_audit(
        rt,
        request,
        audit_id=job.audit_id,
        now=clock(),
        isolation=opts.isolation,
        limits=opts.limits,
        lease_seconds=opts.lease_seconds,
    )
    batch_size = int(job.payload["batch_size"])
    now = clock()

    def enqueue_next(conn: sa.Connection) -> None:
        held = None
        if prep.gate_passed:
            seeds = list(range(request.seed, request.seed + request.samples))
            for n, start in enumerate(range(0, len(seeds), batch_size)):
                enqueue(
                    conn,
                    audit_id=job.audit_id,
                    kind="replay",
                    payload={"batch_no": n, "seeds": seeds[start : start + batch_size]},
                    idempotency_key=f"{job.audit_id}:replay:{n}",
                    now=now,
                    max_attempts=job.max_attempts,
                )
            held = NEVER
        enqueue(
            conn,
            audit_id=job.audit_id,
            kind="finalize",
            payload={},
            idempotency_key=f"{job.audit_id}:finalize",
            now=now,
            max_attempts=job.max_attempts,
            available_at=held,
        )

    complete(engine, job.job_id, job.fencing_token, prep.to_dict(), now=now, then=enqueue_next)


def _replay_job(
    rt: Runtime, job: ClaimedJob, request: AuditRequest, clock: Clock, opts: StageOptions
) -> None:
    engine = rt.ledger.engine
    seeds = [int(s) for s in job.payload["seeds"]]
    batch = run_sample_batch(
        rt,
        request,
        audit_id=job.audit_id,
        job_id=job.job_id,
        seeds=seeds,
        now=clock(),
        isolation=opts.isolation,
        limits=opts.limits,
        lease_seconds=opts.lease_seconds,
    )
    now = stamp(clock())

    def advance(conn: sa.Connection) -> None:
        done = audits.c.progress_done + len(seeds)
        conn.execute(
            sa.update(audits)
            .where(audits.c.id == job.audit_id)
            .values(
                progress_done=sa.case(
                    (done > audits.c.progress_total, audits.c.progress_total), else_=done
                ),
                updated_at=now,
            )
        )
        replays = jobs.alias("r")
        unfinished = sa.exists().where(
            replays.c.audit_id == job.audit_id,
            replays.c.kind == "replay",
            replays.c.status != "done",
        )
        conn.execute(  # the last replay job releases the finalizer
            sa.update(jobs)
            .where(
                jobs.c.audit_id == job.audit_id,
                jobs.c.kind == "finalize",
                jobs.c.status == "queued",
                jobs.c.available_at == NEVER,
                ~unfinished,
            )
            .values(available_at=now, updated_at=now)
        )

    complete(
        engine, job.job_id, job.fencing_token, batch.to_dict(), now=parse_time(now), then=advance
    )


def lineage(
    engine: Engine, audit_id: str, request: AuditRequest
) -> tuple[Preparation, list[BatchResult]] | None:
    """The stored preparation and batches, or ``None`` if lineage does not hold."""
    with read(engine) as conn:
        rows = conn.execute(
            sa.select(
                jobs.c.id, jobs.c.kind, jobs.c.status, jobs.c.payload_json, jobs.c.result_json
            ).where(jobs.c.audit_id == audit_id, jobs.c.kind.in_(("audit", "replay")))
        ).all()
    preparing = [r for r in rows if r[1] == "audit"]
    if len(preparing) != 1 or preparing[0][2] != "done" or preparing[0][4] is None:
        return None
    prep = Preparation.from_dict(loads_object(preparing[0][4]))
    replays = sorted(
        (r for r in rows if r[1] == "replay"), key=lambda r: int(loads_object(r[3])["batch_no"])
    )
    batches: list[BatchResult] = []
    for job_id, _kind, status, payload_json, result_json in replays:
        if status != "done" or result_json is None:
            return None
        batch = BatchResult.from_dict(loads_object(result_json))
        assigned = tuple(int(s) for s in loads_object(payload_json)["seeds"])
        if batch.job_id != job_id or batch.seeds != assigned:
            return None
        if batch.failure is None and tuple(s.seed for s in batch.samples) != assigned:
            return None
        batches.append(batch)
    expected = list(range(request.seed, request.seed + request.samples))
    if prep.gate_passed and [s for b in batches for s in b.seeds] != expected:
        return None
    if not prep.gate_passed and batches:
        return None
    return prep, batches


def issue_time(engine: Engine, job: ClaimedJob, now: datetime) -> datetime:
    """The finalize job's issue time: fixed (fenced) on its first run, so that a
    re-delivered finalizer signs the same statement."""
    issued = job.payload.get("issued_at")
    if isinstance(issued, str):
        return parse_time(issued)
    with fenced(engine, job.job_id, job.fencing_token) as conn:
        conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job.job_id)
            .values(payload_json=dumps({**job.payload, "issued_at": stamp(now)}))
        )
    return parse_time(stamp(now))


def _finalize_job(rt: Runtime, job: ClaimedJob, request: AuditRequest, clock: Clock) -> None:
    engine = rt.ledger.engine
    _move(engine, job, AuditState.FINALIZING, (AuditState.QUEUED, AuditState.RUNNING), clock())
    found = lineage(engine, job.audit_id, request)
    if found is None:
        raise _LineageBroken()
    prep, batches = found
    issued_at = issue_time(engine, job, clock())
    outcome = finalize_audit(
        rt, request, audit_id=job.audit_id, preparation=prep, batches=batches, now=issued_at
    )
    now = clock()
    complete(
        engine,
        job.job_id,
        job.fencing_token,
        outcome.to_dict(),
        now=now,
        then=lambda conn: _conclude(conn, job.audit_id, outcome, now),
    )


def _conclude(conn: sa.Connection, audit_id: str, outcome: AuditOutcome, now: datetime) -> None:
    """Move the audit to its terminal status exactly once (conditional update)."""
    if outcome.classification == FAILED or outcome.envelope is None:
        values: dict[str, Any] = {
            "status": AuditState.FAILED,
            "classification": None,
            "auditability": None,
            "failure_code": outcome.failure or "failed",
            "certificate_json": None,
        }
    else:
        values = {
            "status": AuditState.COMPLETED,
            "classification": outcome.classification,
            "auditability": outcome.auditability.class_.value,
            "failure_code": None,
            "certificate_json": dumps(outcome.envelope),
        }
    moved = conn.execute(
        sa.update(audits)
        .where(audits.c.id == audit_id, audits.c.status.not_in(sorted(TERMINAL_AUDIT_STATES)))
        .values(**values, ledger_index=outcome.ledger_index, updated_at=stamp(now))
    )
    if moved.rowcount != 1:
        raise Conflict("the audit has already concluded")


class _LineageBroken(IntegrityFailure):
    code = "lineage_mismatch"

    def __init__(self) -> None:
        super().__init__("the stored batches do not match their assigned seeds")


def _job_keys(grants: GrantSource) -> dict[str, Any]:
    """A worker whose grants come from the service (Vault mode, any host) holds no keyring
    and no signing key: this job's digest keys and its certificate's signature come from
    the service too, for this claim only."""
    from ..keys import ServiceGrants

    if isinstance(grants, ServiceGrants):
        return {"digests": grants.digest_keys(), "signer": grants.signer()}
    return {}


def execute(runtime: Runtime, job: ClaimedJob, *, clock: Clock, options: StageOptions) -> str:
    """Run ``job`` and commit its outcome; returns ``done``, ``queued``, ``failed`` or ``dead``.

    Raises ``Conflict`` if the lease was lost (nothing of this attempt is committed).
    """
    ledger = FencedLedger(runtime.ledger, job_id=job.job_id, fencing_token=job.fencing_token)
    # a grant is asked for this claim: the service checks its lease and fencing token
    grants = runtime.grants.for_job(job.job_id, job.fencing_token)
    rt = dataclasses.replace(runtime, ledger=ledger, grant_source=grants, **_job_keys(grants))
    engine = runtime.ledger.engine
    try:
        request = _request(engine, job.audit_id)
        if job.kind == "audit":
            _audit_job(rt, job, request, clock, options)
        elif job.kind == "replay":
            _replay_job(rt, job, request, clock, options)
        else:
            _finalize_job(rt, job, request, clock)
        return "done"
    except Conflict:
        raise
    except EnclaveError as exc:
        retry, code = exc.retryable, exc.code
    except LedgerError as exc:  # a retryable one is recorded as the ledger's own trouble
        retry = exc.retryable
        code = "ledger_unavailable" if retry else exc.code
    except Exception as exc:  # noqa: BLE001 - a job must never take its worker down
        log.warning("job %s (%s): unexpected %s", job.job_id, job.kind, type(exc).__name__)
        retry, code = True, "internal"
    result = fail(
        engine,
        job.job_id,
        job.fencing_token,
        now=clock(),
        error_code=code,
        retry=retry,
        recorded_clock=ledger_clock(runtime.ledger),
    )
    return result.status
