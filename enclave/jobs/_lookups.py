"""Read-only lookups on the job tables for callers outside the queue: who holds a job's
lease, and where an audit stands. The service's internal routes check both before they
hand a worker anything (``service/_job_checks.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger.tables import AuditRow, JobRow, table_of
from ledger.transactions import read

from ._model import parse_time

audits, jobs = table_of(AuditRow), table_of(JobRow)

__all__ = ["AuditPlace", "JobLease", "audit_place", "job_lease"]


@dataclass(frozen=True)
class JobLease:
    """A job's lease as recorded: whoever holds it, with which fencing token, until when."""

    audit_id: str
    kind: str  # audit | replay | finalize
    status: str
    fencing_token: int
    owner: str | None
    expires: datetime | None


@dataclass(frozen=True)
class AuditPlace:
    """An audit's tenant, specimen and state."""

    tenant_id: str
    specimen_id: str
    status: str


def job_lease(engine: Engine, job_id: str) -> JobLease | None:
    """The job's lease, or ``None`` when there is no such job."""
    query = sa.select(
        jobs.c.audit_id,
        jobs.c.kind,
        jobs.c.status,
        jobs.c.fencing_token,
        jobs.c.lease_owner,
        jobs.c.lease_expires_at,
    ).where(jobs.c.id == job_id)
    with read(engine) as conn:
        row = conn.execute(query).first()
    if row is None:
        return None
    audit_id, kind, status, token, owner, expires = row
    return JobLease(
        audit_id=str(audit_id),
        kind=str(kind),
        status=str(status),
        fencing_token=int(token),
        owner=owner if isinstance(owner, str) else None,
        expires=None if expires is None else parse_time(str(expires)),
    )


def audit_place(engine: Engine, audit_id: str) -> AuditPlace | None:
    """The audit's tenant, specimen and state, or ``None`` when there is no such audit."""
    query = sa.select(audits.c.tenant_id, audits.c.specimen_id, audits.c.status).where(
        audits.c.id == audit_id
    )
    with read(engine) as conn:
        row = conn.execute(query).first()
    return None if row is None else AuditPlace(str(row[0]), str(row[1]), str(row[2]))
