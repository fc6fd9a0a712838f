"""The job queue: claim under a lease, heartbeat, and fenced commits.

Invariants:

1. A job is claimable when it is ``queued`` and ``available_at <= now``, or ``leased``
   with ``lease_expires_at <= now`` (its worker died or stalled), and it has attempts
   left. Claiming is one write transaction: PostgreSQL picks the row with ``SELECT ...
   FOR UPDATE SKIP LOCKED`` (concurrent claimers never wait on each other nor take the
   same row); SQLite takes the database write lock up front (``BEGIN IMMEDIATE``), and
   its dialect renders no ``FOR UPDATE`` at all.
2. Every claim increments ``attempts`` and ``fencing_token`` and sets the lease.
3. ``heartbeat``, ``complete``, ``fail`` and every write made under ``fenced`` commit
   only if the job is still ``leased`` with the caller's fencing token; otherwise they
   raise ``Conflict`` and change nothing. A worker paused past its lease therefore
   cannot overwrite its successor's result.
4. A job out of attempts becomes ``dead`` (its lease expired on the last attempt, see
   ``reap``, or it failed with a retryable error) and its audit becomes ``FAILED``: fail
   closed. A permanent error makes the job ``failed`` and the audit ``FAILED`` at once.
   Either way ``audit.failed`` is appended to the ledger in the same transaction
   (unless the audit's conclusion is already recorded), stamped by ``recorded_clock``.
5. Lock order, everywhere: the audit row, then job rows, then the ledger tip. No
   transaction here takes them in another order, so PostgreSQL cannot deadlock.
6. The clock is the caller's ``now``; nothing here reads the system time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger import TERMINAL_AUDIT_STATES, AuditState, Conflict, NotFound, utc_clock
from ledger.tables import JOB_KINDS, AuditRow, JobRow, table_of
from ledger.transactions import guarded, insert_new, read, write

from ._conclusions import record_failure
from ._model import (
    ClaimedJob,
    FailResult,
    dumps,
    loads_object,
    parse_time,
    stamp,
)

audits, jobs = table_of(AuditRow), table_of(JobRow)

__all__ = [
    "claim",
    "complete",
    "enqueue",
    "fail",
    "fail_audit",
    "fenced",
    "heartbeat",
    "job_id_for",
    "lock_job",
    "reap",
    "stop_open_jobs",
    "write_tx",
]

_MAX_BACKOFF_SECONDS = 30.0
_OPEN_JOB_STATUSES = ("queued", "leased")


def _claimable(at: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        sa.or_(
            sa.and_(jobs.c.status == "queued", jobs.c.available_at <= at),
            sa.and_(jobs.c.status == "leased", jobs.c.lease_expires_at <= at),
        ),
        jobs.c.attempts < jobs.c.max_attempts,
    )


def _expired(at: str) -> sa.ColumnElement[bool]:
    """A leased job whose last attempt's lease has run out."""
    return sa.and_(
        jobs.c.status == "leased",
        jobs.c.lease_expires_at <= at,
        jobs.c.attempts >= jobs.c.max_attempts,
    )


def _leased_with(job_id: str, fencing_token: int) -> sa.ColumnElement[bool]:
    return sa.and_(
        jobs.c.id == job_id, jobs.c.fencing_token == fencing_token, jobs.c.status == "leased"
    )


# the name the job tests and callers have always imported
write_tx = write


def _check_lease(lease_seconds: float) -> None:
    if isinstance(lease_seconds, bool) or not 0 < lease_seconds <= 86_400:
        raise ValueError("lease_seconds must lie in (0, 86400]")


# infrastructure failure codes that name what is down (enclave.keys raises the first)
NAMED_OUTAGES = frozenset({"key_server_unavailable"})


def job_id_for(idempotency_key: str) -> str:
    """The durable id of the job with this idempotency key (the same on every delivery)."""
    return "jb-" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:20]


def enqueue(
    conn: sa.Connection,
    *,
    audit_id: str,
    kind: str,
    payload: Mapping[str, Any],
    idempotency_key: str,
    now: datetime,
    max_attempts: int,
    available_at: str | None = None,
) -> str:
    """Insert a job unless one with ``idempotency_key`` exists; return its id either way."""
    if kind not in JOB_KINDS:
        raise ValueError("unknown job kind")
    if isinstance(max_attempts, bool) or not 1 <= max_attempts <= 1000:
        raise ValueError("max_attempts must lie in 1..1000")
    job_id = job_id_for(idempotency_key)
    at = stamp(now)
    conn.execute(
        insert_new(conn, jobs).values(
            id=job_id,
            audit_id=audit_id,
            kind=kind,
            payload_json=dumps(dict(payload)),
            status="queued",
            attempts=0,
            max_attempts=max_attempts,
            fencing_token=0,
            idempotency_key=idempotency_key,
            available_at=available_at or at,
            created_at=at,
            updated_at=at,
        )
    )
    return job_id


@guarded("jobs.claim")
def claim(
    engine: Engine,
    *,
    worker_id: str,
    now: datetime,
    lease_seconds: float,
    kinds: Sequence[str] | None = None,
) -> ClaimedJob | None:
    """Lease the oldest available job (of ``kinds``), or ``None`` if there is none."""
    _check_lease(lease_seconds)
    if not worker_id:
        raise ValueError("worker_id must be non-empty")
    at = stamp(now)
    pick = sa.select(jobs.c.id).where(_claimable(at))
    if kinds is not None:
        if not kinds or any(k not in JOB_KINDS for k in kinds):
            raise ValueError("unknown job kind")
        pick = pick.where(jobs.c.kind.in_(list(kinds)))
    pick = (
        pick.order_by(jobs.c.available_at, jobs.c.created_at, jobs.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    with write(engine) as conn:
        row = conn.execute(pick).first()
        if row is None:
            return None
        conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == row[0])
            .values(
                status="leased",
                attempts=jobs.c.attempts + 1,
                fencing_token=jobs.c.fencing_token + 1,
                lease_owner=worker_id,
                lease_expires_at=stamp(now, lease_seconds),
                updated_at=at,
            )
        )
        job = conn.execute(
            sa.select(
                jobs.c.id,
                jobs.c.audit_id,
                jobs.c.kind,
                jobs.c.payload_json,
                jobs.c.attempts,
                jobs.c.max_attempts,
                jobs.c.fencing_token,
                jobs.c.lease_owner,
                jobs.c.lease_expires_at,
                jobs.c.idempotency_key,
            ).where(jobs.c.id == row[0])
        ).one()
    return ClaimedJob(
        job_id=job[0],
        audit_id=job[1],
        kind=job[2],
        payload=loads_object(job[3]),
        attempts=int(job[4]),
        max_attempts=int(job[5]),
        fencing_token=int(job[6]),
        lease_owner=job[7],
        lease_expires_at=parse_time(job[8]),
        idempotency_key=job[9],
    )


@guarded("jobs.heartbeat")
def heartbeat(
    engine: Engine, job_id: str, fencing_token: int, *, now: datetime, lease_seconds: float
) -> datetime:
    """Extend the lease to ``now + lease_seconds`` if ``fencing_token`` is current."""
    _check_lease(lease_seconds)
    expires = stamp(now, lease_seconds)
    with write(engine) as conn:
        result = conn.execute(
            sa.update(jobs)
            .where(_leased_with(job_id, fencing_token))
            .values(lease_expires_at=expires, updated_at=stamp(now))
        )
        if result.rowcount != 1:
            raise Conflict("the job's lease is no longer held (stale fencing token)")
    return parse_time(expires)


def _lock_audit(conn: sa.Connection, audit_id: str) -> None:
    locked = sa.select(audits.c.id).where(audits.c.id == audit_id).with_for_update()
    if conn.execute(locked).first() is None:
        raise NotFound("no such audit")


def lock_job(conn: sa.Connection, job_id: str, fencing_token: int) -> str:
    """Lock the job's audit row and the job row; check the lease. Returns the audit id."""
    row = conn.execute(sa.select(jobs.c.audit_id).where(jobs.c.id == job_id)).first()
    if row is None:
        raise NotFound("no such job")
    _lock_audit(conn, row[0])
    locked = (
        sa.select(jobs.c.status, jobs.c.fencing_token).where(jobs.c.id == job_id).with_for_update()
    )
    status, token = conn.execute(locked).one()
    if status != "leased" or int(token) != fencing_token:
        raise Conflict("the job's lease is no longer held (stale fencing token)")
    return str(row[0])


@contextmanager
def fenced(engine: Engine, job_id: str, fencing_token: int) -> Iterator[sa.Connection]:
    """A write transaction that proceeds only while ``fencing_token`` is current."""
    with write(engine) as conn:
        lock_job(conn, job_id, fencing_token)
        yield conn


@guarded("jobs.complete")
def complete(
    engine: Engine,
    job_id: str,
    fencing_token: int,
    result: Mapping[str, Any],
    *,
    now: datetime,
    then: Callable[[sa.Connection], None] | None = None,
) -> None:
    """Mark the job ``done`` with ``result``; ``then`` runs in the same transaction."""
    with fenced(engine, job_id, fencing_token) as conn:
        done = conn.execute(
            sa.update(jobs)
            .where(_leased_with(job_id, fencing_token))
            .values(
                status="done",
                result_json=dumps(dict(result)),
                lease_expires_at=None,
                error_code=None,
                updated_at=stamp(now),
            )
        )
        if done.rowcount != 1:  # unreachable after the fence; kept as a second guard
            raise Conflict("the job's lease is no longer held (stale fencing token)")
        if then is not None:
            then(conn)


def fail_audit(conn: sa.Connection, audit_id: str, *, code: str, now: datetime) -> bool:
    """Inside a write transaction: FAILED the audit (once) and stop its other jobs.

    Returns whether this call made the transition. Open jobs become ``failed`` with a
    new fencing token, so their workers' later commits are rejected.
    """
    at = stamp(now)
    moved = conn.execute(
        sa.update(audits)
        .where(audits.c.id == audit_id, audits.c.status.not_in(sorted(TERMINAL_AUDIT_STATES)))
        .values(status=AuditState.FAILED, failure_code=code, updated_at=at)
    )
    if moved.rowcount != 1:
        return False
    stop_open_jobs(conn, audit_id, code="audit_failed", now=now)
    return True


def stop_open_jobs(conn: sa.Connection, audit_id: str, *, code: str, now: datetime) -> None:
    conn.execute(
        sa.update(jobs)
        .where(jobs.c.audit_id == audit_id, jobs.c.status.in_(_OPEN_JOB_STATUSES))
        .values(
            status="failed",
            error_code=code,
            fencing_token=jobs.c.fencing_token + 1,
            lease_expires_at=None,
            updated_at=stamp(now),
        )
    )


@guarded("jobs.fail")
def fail(
    engine: Engine,
    job_id: str,
    fencing_token: int,
    *,
    now: datetime,
    error_code: str,
    retry: bool,
    recorded_clock: Callable[[], str] = utc_clock,
) -> FailResult:
    """Give the job back (``retry`` and attempts left: ``queued`` after a backoff) or end it.

    An ended job is ``failed`` (permanent error) or ``dead`` (out of attempts) and its
    audit becomes ``FAILED`` (and ``audit.failed`` is recorded) in the same transaction.
    """
    if not error_code:
        raise ValueError("error_code must be non-empty")
    with fenced(engine, job_id, fencing_token) as conn:
        audit_id, attempts, max_attempts = conn.execute(
            sa.select(jobs.c.audit_id, jobs.c.attempts, jobs.c.max_attempts).where(
                jobs.c.id == job_id
            )
        ).one()
        if retry and attempts < max_attempts:
            backoff = min(0.5 * 2 ** (int(attempts) - 1), _MAX_BACKOFF_SECONDS)
            conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job_id)
                .values(
                    status="queued",
                    error_code=error_code,
                    lease_expires_at=None,
                    available_at=stamp(now, backoff),
                    updated_at=stamp(now),
                )
            )
            return FailResult(status="queued", audit_failed=False)
        status = "dead" if retry else "failed"
        conn.execute(
            sa.update(jobs)
            .where(jobs.c.id == job_id)
            .values(
                status=status, error_code=error_code, lease_expires_at=None, updated_at=stamp(now)
            )
        )
        # out of attempts: the audit names the cause when the last one was a named
        # outage (an operator must fix the key server, not retry the audit)
        named = status != "dead" or error_code in NAMED_OUTAGES
        audit_code = error_code if named else "attempts_exhausted"
        failed = fail_audit(conn, audit_id, code=audit_code, now=now)
        if failed:
            record_failure(conn, audit_id, audit_code, clock=recorded_clock)
    return FailResult(status=status, audit_failed=failed)


@guarded("jobs.reap")
def reap(
    engine: Engine, *, now: datetime, recorded_clock: Callable[[], str] = utc_clock
) -> list[str]:
    """Jobs whose last attempt's lease expired become ``dead``; their audits ``FAILED``.

    Returns the ids of the audits this call failed.
    """
    at = stamp(now)
    with read(engine) as conn:
        candidates = conn.execute(sa.select(jobs.c.id, jobs.c.audit_id).where(_expired(at))).all()
    failed: list[str] = []
    for job_id, audit_id in candidates:
        with write(engine) as conn:
            _lock_audit(conn, audit_id)
            still = sa.select(jobs.c.id).where(jobs.c.id == job_id, _expired(at)).with_for_update()
            if conn.execute(still).first() is None:
                continue  # heartbeated, completed or reaped meanwhile
            conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job_id)
                .values(
                    status="dead",
                    error_code="lease_expired",
                    fencing_token=jobs.c.fencing_token + 1,
                    lease_expires_at=None,
                    updated_at=at,
                )
            )
            if fail_audit(conn, audit_id, code="attempts_exhausted", now=now):
                failed.append(audit_id)
                record_failure(conn, audit_id, "attempts_exhausted", clock=recorded_clock)
    return failed
