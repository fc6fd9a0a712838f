"""The job queue: claim under a lease, heartbeat, and fenced commits.

Invariants:

1. A job is claimable when it is ``queued`` and ``available_at <= now``, or ``leased``
   with ``lease_expires_at <= now`` (its worker died or stalled), and it has attempts
   left. Claiming is one write transaction: PostgreSQL picks the row with ``SELECT ...
   FOR UPDATE SKIP LOCKED`` (concurrent claimers never wait on each other nor take the
   same row); SQLite takes the database write lock up front (``BEGIN IMMEDIATE``).
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

from ledger import Conflict, NotFound, utc_clock
from ledger._transactions import guarded, read, write

from ._conclusions import record_failure
from ._model import (
    TERMINAL_AUDIT_STATUSES,
    ClaimedJob,
    FailResult,
    dumps,
    loads_object,
    parse_time,
    stamp,
)
from ._tables import JOB_KINDS

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
]

_MAX_BACKOFF_SECONDS = 30.0
_TERMINAL = "(" + ", ".join(f"'{s}'" for s in TERMINAL_AUDIT_STATUSES) + ")"
_CLAIMABLE = (
    "((status = 'queued' AND available_at <= :now) "
    "OR (status = 'leased' AND lease_expires_at <= :now)) AND attempts < max_attempts"
)


# the name the job tests and callers have always imported
write_tx = write


def _for_update(conn: sa.Connection, suffix: str = "") -> str:
    if conn.dialect.name == "sqlite":  # the write transaction already holds the lock
        return ""
    return " FOR UPDATE" + suffix


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
        sa.text(
            "INSERT INTO jobs (id, audit_id, kind, payload_json, status, attempts, max_attempts, "
            "fencing_token, idempotency_key, available_at, created_at, updated_at) VALUES "
            "(:id, :audit, :kind, :payload, 'queued', 0, :max, 0, :key, :avail, :at, :at) "
            "ON CONFLICT DO NOTHING"
        ),
        {
            "id": job_id,
            "audit": audit_id,
            "kind": kind,
            "payload": dumps(dict(payload)),
            "max": max_attempts,
            "key": idempotency_key,
            "avail": available_at or at,
            "at": at,
        },
    )
    return job_id


_JOB_COLUMNS = (
    "id, audit_id, kind, payload_json, attempts, max_attempts, fencing_token, lease_owner, "
    "lease_expires_at, idempotency_key"
)


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
    sql = f"SELECT id FROM jobs WHERE {_CLAIMABLE}"  # noqa: S608 - fixed text
    params: dict[str, Any] = {"now": at}
    if kinds is not None:
        if not kinds or any(k not in JOB_KINDS for k in kinds):
            raise ValueError("unknown job kind")
        sql += " AND kind IN :kinds"
        params["kinds"] = list(kinds)
    with write(engine) as conn:
        sql += " ORDER BY available_at, created_at, id LIMIT 1" + _for_update(conn, " SKIP LOCKED")
        statement = sa.text(sql)
        if kinds is not None:
            statement = statement.bindparams(sa.bindparam("kinds", expanding=True))
        row = conn.execute(statement, params).first()
        if row is None:
            return None
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = 'leased', attempts = attempts + 1, "
                "fencing_token = fencing_token + 1, lease_owner = :owner, "
                "lease_expires_at = :expires, updated_at = :now WHERE id = :id"
            ),
            {"owner": worker_id, "expires": stamp(now, lease_seconds), "now": at, "id": row[0]},
        )
        job = conn.execute(
            sa.text(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = :id"),  # noqa: S608 - fixed text
            {"id": row[0]},
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
            sa.text(
                "UPDATE jobs SET lease_expires_at = :expires, updated_at = :now "
                "WHERE id = :id AND fencing_token = :token AND status = 'leased'"
            ),
            {"expires": expires, "now": stamp(now), "id": job_id, "token": fencing_token},
        )
        if result.rowcount != 1:
            raise Conflict("the job's lease is no longer held (stale fencing token)")
    return parse_time(expires)


def _lock_audit(conn: sa.Connection, audit_id: str) -> None:
    sql = "SELECT id FROM audits WHERE id = :id" + _for_update(conn)  # noqa: S608 - fixed text
    if conn.execute(sa.text(sql), {"id": audit_id}).first() is None:
        raise NotFound("no such audit")


def lock_job(conn: sa.Connection, job_id: str, fencing_token: int) -> str:
    """Lock the job's audit row and the job row; check the lease. Returns the audit id."""
    row = conn.execute(sa.text("SELECT audit_id FROM jobs WHERE id = :id"), {"id": job_id}).first()
    if row is None:
        raise NotFound("no such job")
    _lock_audit(conn, row[0])
    sql = "SELECT status, fencing_token FROM jobs WHERE id = :id" + _for_update(conn)  # noqa: S608
    status, token = conn.execute(sa.text(sql), {"id": job_id}).one()
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
            sa.text(
                "UPDATE jobs SET status = 'done', result_json = :result, lease_expires_at = NULL, "
                "error_code = NULL, updated_at = :now "
                "WHERE id = :id AND fencing_token = :token AND status = 'leased'"
            ),
            {
                "result": dumps(dict(result)),
                "now": stamp(now),
                "id": job_id,
                "token": fencing_token,
            },
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
        sa.text(
            "UPDATE audits SET status = 'FAILED', failure_code = :code, updated_at = :now "  # noqa: S608
            f"WHERE id = :id AND status NOT IN {_TERMINAL}"
        ),
        {"code": code, "now": at, "id": audit_id},
    )
    if moved.rowcount != 1:
        return False
    stop_open_jobs(conn, audit_id, code="audit_failed", now=now)
    return True


def stop_open_jobs(conn: sa.Connection, audit_id: str, *, code: str, now: datetime) -> None:
    conn.execute(
        sa.text(
            "UPDATE jobs SET status = 'failed', error_code = :code, "
            "fencing_token = fencing_token + 1, lease_expires_at = NULL, updated_at = :now "
            "WHERE audit_id = :audit AND status IN ('queued', 'leased')"
        ),
        {"code": code, "now": stamp(now), "audit": audit_id},
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
            sa.text("SELECT audit_id, attempts, max_attempts FROM jobs WHERE id = :id"),
            {"id": job_id},
        ).one()
        if retry and attempts < max_attempts:
            backoff = min(0.5 * 2 ** (int(attempts) - 1), _MAX_BACKOFF_SECONDS)
            conn.execute(
                sa.text(
                    "UPDATE jobs SET status = 'queued', error_code = :code, "
                    "lease_expires_at = NULL, available_at = :avail, updated_at = :now "
                    "WHERE id = :id"
                ),
                {"code": error_code, "avail": stamp(now, backoff), "now": stamp(now), "id": job_id},
            )
            return FailResult(status="queued", audit_failed=False)
        status = "dead" if retry else "failed"
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = :status, error_code = :code, lease_expires_at = NULL, "
                "updated_at = :now WHERE id = :id"
            ),
            {"status": status, "code": error_code, "now": stamp(now), "id": job_id},
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
    expired = "status = 'leased' AND lease_expires_at <= :now AND attempts >= max_attempts"
    with read(engine) as conn:
        candidates = conn.execute(
            sa.text(f"SELECT id, audit_id FROM jobs WHERE {expired}"),  # noqa: S608 - fixed text
            {"now": at},
        ).all()
    failed: list[str] = []
    for job_id, audit_id in candidates:
        with write(engine) as conn:
            _lock_audit(conn, audit_id)
            sql = f"SELECT id FROM jobs WHERE id = :id AND {expired}" + _for_update(conn)  # noqa: S608
            if conn.execute(sa.text(sql), {"id": job_id, "now": at}).first() is None:
                continue  # heartbeated, completed or reaped meanwhile
            conn.execute(
                sa.text(
                    "UPDATE jobs SET status = 'dead', error_code = 'lease_expired', "
                    "fencing_token = fencing_token + 1, lease_expires_at = NULL, updated_at = :now "
                    "WHERE id = :id"
                ),
                {"now": at, "id": job_id},
            )
            if fail_audit(conn, audit_id, code="attempts_exhausted", now=now):
                failed.append(audit_id)
                record_failure(conn, audit_id, "attempts_exhausted", clock=recorded_clock)
    return failed
