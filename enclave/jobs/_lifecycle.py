"""The audit lifecycle as the service sees it: submit, status, list, cancel, certificate.

``submit_audit`` records the audit ``QUEUED`` with its first job and returns at once;
workers (``_worker``) do the rest:

1. the ``audit`` job runs ``prepare_audit`` (grant, intervention proof, baseline gate);
   if the gate passed it enqueues one ``replay`` job per batch of seeds and a
   ``finalize`` job held back until every replay job is done; otherwise a ``finalize``
   job available at once;
2. each ``replay`` job runs ``run_sample_batch`` on exactly its assigned seeds;
3. the ``finalize`` job checks lineage, runs ``finalize_audit`` and marks the audit
   ``COMPLETED`` (with its certificate) or ``FAILED`` (with a safe failure code only).

Every state change is one database transaction; every job commit is fenced.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ledger import (
    TERMINAL_AUDIT_STATES,
    AuditState,
    Conflict,
    LedgerError,
    LedgerPosition,
    NotFound,
    loads,
)
from ledger.tables import AuditRow, JobRow, SpecimenRow, table_of
from ledger.transactions import guarded, read, write

from .._errors import BadInput, Refused
from .._runtime import Runtime
from ..replay import AuditRequest
from ..replay.stages import record_request
from ._conclusions import append_in, ledger_clock, save_positions
from ._fencing import TxLedger
from ._model import AuditStatus, dumps, stamp
from ._queue import enqueue, stop_open_jobs

audits, jobs = table_of(AuditRow), table_of(JobRow)

__all__ = [
    "AuditPage",
    "CANCEL_REASONS",
    "ListedAudit",
    "audit_page",
    "audit_status",
    "cancel_audit",
    "certificate",
    "list_audits",
    "submit_audit",
]

_STATUS_COLUMNS = (
    *(
        audits.c[name]
        for name in (
            "id",
            "status",
            "progress_done",
            "progress_total",
            "classification",
            "auditability",
            "failure_code",
            "created_at",
            "updated_at",
            "tenant_id",
            "specimen_id",
            "requester",
        )
    ),
    # whether there is one, not the envelope: a status read never carries a certificate
    audits.c.certificate_json.is_not(None).label("has_certificate"),
)
_specimens = table_of(SpecimenRow)
_MAX_BATCH = 100_000


def _status_of(row: Any) -> AuditStatus:
    return AuditStatus.from_row(row._mapping)


def _select_status(conn: sa.Connection, audit_id: str) -> AuditStatus | None:
    row = conn.execute(sa.select(*_STATUS_COLUMNS).where(audits.c.id == audit_id)).first()
    return None if row is None else _status_of(row)


def submit_audit(
    runtime: Runtime,
    request: AuditRequest,
    *,
    tenant_id: str,
    now: datetime,
    idempotency_key: str | None = None,
    batch_size: int = 250,
    max_attempts: int = 5,
    audit_id: str | None = None,
) -> AuditStatus:
    """Record the audit ``QUEUED`` with its ``audit`` job; never waits for a replay.

    The same ``idempotency_key`` with the same request and tenant returns the audit
    already recorded (nothing new is written); with a different request it is a
    ``Conflict``. The ``audit.requested`` ledger entry commits with the rows.
    """
    if isinstance(batch_size, bool) or not 1 <= batch_size <= _MAX_BATCH:
        raise BadInput(f"batch size must lie in 1..{_MAX_BATCH}")
    if isinstance(max_attempts, bool) or not 1 <= max_attempts <= 100:
        raise BadInput("max attempts must lie in 1..100")
    if not tenant_id:
        raise BadInput("a tenant is required")
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= 200:
        raise BadInput("an idempotency key has 1-200 characters")
    try:
        record = runtime.ledger.get_specimen(request.specimen_id)
    except NotFound:
        raise BadInput("no such specimen") from None
    if record.tenant_id != tenant_id:
        raise Refused("the specimen belongs to another tenant", code="tenant_mismatch")
    audit_id = audit_id or f"au-{secrets.token_hex(8)}"
    request_json = dumps(request.to_dict())
    try:
        return _submit(
            runtime,
            request,
            request_json,
            tenant_id=tenant_id,
            now=now,
            idempotency_key=idempotency_key,
            batch_size=batch_size,
            max_attempts=max_attempts,
            audit_id=audit_id,
        )
    except Conflict:
        if idempotency_key is None:
            raise
        # a concurrent submit with the same key won the insert: answer with its audit
        existing = _by_key(runtime, idempotency_key, tenant_id, request_json)
        if existing is None:
            raise
        return existing


@guarded("jobs.submit_audit")
def _by_key(runtime: Runtime, key: str, tenant_id: str, request_json: str) -> AuditStatus | None:
    with read(runtime.ledger.engine) as conn:
        return _same_request(conn, key, tenant_id, request_json)


def _same_request(
    conn: sa.Connection, key: str, tenant_id: str, request_json: str
) -> AuditStatus | None:
    row = conn.execute(
        sa.select(audits.c.id, audits.c.tenant_id, audits.c.request_json).where(
            audits.c.idempotency_key == key
        )
    ).first()
    if row is None:
        return None
    if row[1] != tenant_id or row[2] != request_json:
        raise Conflict("the idempotency key was used for a different request")
    return _select_status(conn, row[0])


@guarded("jobs.submit_audit")
def _submit(
    runtime: Runtime,
    request: AuditRequest,
    request_json: str,
    *,
    tenant_id: str,
    now: datetime,
    idempotency_key: str | None,
    batch_size: int,
    max_attempts: int,
    audit_id: str,
) -> AuditStatus:
    ledger = runtime.ledger
    with write(ledger.engine) as conn:
        if idempotency_key is not None:
            existing = _same_request(conn, idempotency_key, tenant_id, request_json)
            if existing is not None:
                return existing
        at = stamp(now)
        conn.execute(
            sa.insert(audits).values(
                id=audit_id,
                tenant_id=tenant_id,
                specimen_id=request.specimen_id,
                requester=request.requester,
                purpose=request.purpose,
                request_json=request_json,
                status=AuditState.QUEUED,
                progress_done=0,
                progress_total=request.samples,
                idempotency_key=idempotency_key,
                created_at=at,
                updated_at=at,
            )
        )
        enqueue(
            conn,
            audit_id=audit_id,
            kind="audit",
            payload={"batch_size": batch_size},
            idempotency_key=f"{audit_id}:audit",
            now=now,
            max_attempts=max_attempts,
        )
        bound = TxLedger(ledger, conn)
        with_bound = dataclasses.replace(runtime, ledger=bound)
        record_request(with_bound, request, audit_id=audit_id, now=now)
        status = _select_status(conn, audit_id)
    save_positions(ledger, bound.appended)
    assert status is not None
    return status


@guarded("jobs.audit_status")
def audit_status(runtime: Runtime, audit_id: str) -> AuditStatus:
    with read(runtime.ledger.engine) as conn:
        status = _select_status(conn, audit_id)
    if status is None:
        raise NotFound("no such audit")
    return status


def open_audits(runtime: Runtime, audit_ids: Iterable[str]) -> set[str]:
    """Those of ``audit_ids`` not yet terminal, in one query per 500 ids (a waiter over a
    large library must not read each audit's row on every poll)."""
    ids = sorted(set(audit_ids))
    found: set[str] = set()
    with read(runtime.ledger.engine) as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found.update(
                conn.execute(
                    sa.select(audits.c.id).where(
                        audits.c.id.in_(chunk),
                        audits.c.status.not_in(sorted(TERMINAL_AUDIT_STATES)),
                    )
                ).scalars()
            )
    return found


@dataclasses.dataclass(frozen=True, slots=True)
class ListedAudit:
    """An audit in a listing, with what access to it depends on: its specimen's
    classification and legal hold (None and False if the specimen row is gone)."""

    status: AuditStatus
    specimen_classification: str | None
    specimen_legal_hold: bool


@dataclasses.dataclass(frozen=True, slots=True)
class AuditPage:
    """Up to ``limit`` audits; ``next_after`` (created_at, id) continues (None: the end)."""

    items: tuple[ListedAudit, ...]
    next_after: tuple[str, str] | None
    total: int


_UNKNOWN_RANK = 3  # an audit whose specimen row is gone reads as restricted


def _audit_where(
    tenant_id: str | None, requester: str | None, ranks: frozenset[int] | None
) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = []
    if tenant_id is not None:
        where.append(audits.c.tenant_id == tenant_id)
    if requester is not None:
        where.append(audits.c.requester == requester)
    if ranks is not None:
        if not ranks:
            where.append(sa.false())
        else:
            rank = sa.func.coalesce(_specimens.c.classification_rank, _UNKNOWN_RANK)
            where.append(rank.in_(sorted(ranks)))
    return where


@guarded("jobs.list_audits")
def audit_page(
    runtime: Runtime,
    *,
    tenant_id: str | None = None,
    requester: str | None = None,
    ranks: frozenset[int] | None = None,
    limit: int = 50,
    after: tuple[str, str] | None = None,
) -> AuditPage:
    """Newest first (created_at, id), one keyset page in one bounded statement, with an
    index count of all that match. ``ranks`` keeps audits whose specimen's
    classification rank (``ledger._facts``) is one of them."""
    if isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise BadInput("limit must lie in 1..1000")
    where = _audit_where(tenant_id, requester, ranks)
    joined = audits.outerjoin(_specimens, _specimens.c.id == audits.c.specimen_id)
    count = sa.select(sa.func.count()).select_from(joined).where(*where)
    if after is not None:
        after_at, after_id = after
        where.append(
            sa.or_(
                audits.c.created_at < after_at,
                sa.and_(audits.c.created_at == after_at, audits.c.id < after_id),
            )
        )
    page = (
        sa.select(
            *_STATUS_COLUMNS,
            _specimens.c.highest_classification.label("specimen_classification"),
            _specimens.c.legal_hold.label("specimen_legal_hold"),
        )
        .select_from(joined)
        .where(*where)
        .order_by(audits.c.created_at.desc(), audits.c.id.desc())
        .limit(limit + 1)
    )
    with read(runtime.ledger.engine) as conn:
        rows = conn.execute(page).all()
        total = int(conn.execute(count).scalar_one())
    shown = rows[:limit]
    items = tuple(
        ListedAudit(
            status=_status_of(row),
            specimen_classification=row._mapping["specimen_classification"],
            specimen_legal_hold=bool(row._mapping["specimen_legal_hold"]),
        )
        for row in shown
    )
    last = items[-1].status if items and len(rows) > limit else None
    return AuditPage(
        items=items,
        next_after=None if last is None else (str(last.created_at), str(last.audit_id)),
        total=total,
    )


def list_audits(
    runtime: Runtime,
    *,
    tenant_id: str | None = None,
    requester: str | None = None,
    limit: int = 50,
    after: tuple[str, str] | None = None,
) -> list[AuditStatus]:
    """Newest first, filtered by tenant and/or requester; ``after`` continues a page."""
    page = audit_page(runtime, tenant_id=tenant_id, requester=requester, limit=limit, after=after)
    return [item.status for item in page.items]


CANCEL_REASONS = ("withdrawn", "duplicate", "wrong_parameters", "superseded", "operator")


def _never_ran(conn: sa.Connection, audit_id: str) -> bool:
    """No job of the audit was ever claimed: nothing ran, nothing could be observed."""
    claimed = conn.execute(
        sa.select(sa.func.count())
        .select_from(jobs)
        .where(jobs.c.audit_id == audit_id, jobs.c.attempts > 0)
    ).scalar_one()
    return int(claimed) == 0


@guarded("jobs.cancel_audit")
def cancel_audit(
    runtime: Runtime,
    audit_id: str,
    *,
    now: datetime,
    by: str | None = None,
    reason: str = "withdrawn",
) -> AuditStatus:
    """Cancel a queued or running audit: its open jobs stop, later commits are rejected.

    ``audit.cancelled`` records who (``by``) and why (one of ``CANCEL_REASONS``). An
    audit none of whose jobs was ever claimed gives its disclosure charge back:
    ``audit.refunded`` (subject: the specimen) names the admission's request id, which
    the budget then no longer counts. Once a worker has claimed work the charge stays:
    what the audit's status showed meanwhile may already carry information.

    Cancelling a cancelled audit returns it unchanged; a completed or failed audit
    cannot be cancelled (``Conflict``).
    """
    if reason not in CANCEL_REASONS:
        raise BadInput("the cancel reason must be one of: " + ", ".join(CANCEL_REASONS))
    ledger = runtime.ledger
    positions: list[LedgerPosition] = []
    with write(ledger.engine) as conn:
        row = conn.execute(
            sa.select(
                audits.c.status, audits.c.specimen_id, audits.c.requester, audits.c.idempotency_key
            )
            .where(audits.c.id == audit_id)
            .with_for_update()
        ).first()
        if row is None:
            raise NotFound("no such audit")
        if row[0] in TERMINAL_AUDIT_STATES:
            if row[0] != AuditState.CANCELLED:
                raise Conflict("the audit has already concluded")
        else:
            refund = _never_ran(conn, audit_id) and row[3] is not None
            stop_open_jobs(conn, audit_id, code="cancelled", now=now)
            conn.execute(
                sa.update(audits)
                .where(audits.c.id == audit_id)
                .values(
                    status=AuditState.CANCELLED, failure_code="cancelled", updated_at=stamp(now)
                )
            )
            body = {
                "audit_id": audit_id,
                "cancelled_at": stamp(now),
                "by": by or "-",
                "reason": reason,
                "refunded": refund,
            }
            items: list[tuple[str, str, dict[str, Any]]] = [("audit.cancelled", audit_id, body)]
            if refund:
                refunded = {
                    "audit_id": audit_id,
                    "request_id": row[3],
                    "analyst": row[2],
                    "at": stamp(now),
                }
                items.append(("audit.refunded", row[1], refunded))
            positions = append_in(conn, items, clock=ledger_clock(ledger))
        status = _select_status(conn, audit_id)
    save_positions(ledger, positions)
    assert status is not None
    return status


@guarded("jobs.certificate")
def certificate(runtime: Runtime, audit_id: str) -> dict[str, Any] | None:
    """The audit's signed certificate (DSSE envelope), or ``None`` if it has none (yet)."""
    with read(runtime.ledger.engine) as conn:
        row = conn.execute(
            sa.select(audits.c.certificate_json).where(audits.c.id == audit_id)
        ).first()
    if row is None:
        raise NotFound("no such audit")
    if row[0] is None:
        return None
    value = loads(row[0])
    if not isinstance(value, dict):
        raise LedgerError("a stored certificate is not a JSON object")
    return value
