"""The job tables (SQLModel metadata): ``audits`` and ``jobs``. Metadata only.

They live in the ledger's database (so a worker on any host that shares the database
URL can claim work) but apart from the chain's tables: the ledger proper is the entry
chain and the specimens; these rows are mutable work state, which ``enclave.jobs``
drives. Revision ``ledger/migrations/versions/0002_jobs.py`` creates them.

What may be stored: the frozen request (``AuditRequest.to_dict()``: identities, the
intervention, an analyst-supplied REPLACE value), stage results (``Preparation``,
``BatchResult``, ``AuditOutcome``: digests, counts, bounded numbers), the signed
certificate. Never captured payload content.

Times are ISO-8601 UTC text in one fixed width (``2025-03-01T12:00:00.000000Z``) so
that text order is time order on every backend. JSON columns hold canonical JSON.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from .._audit_state import AuditState

__all__ = [
    "AUDIT_STATUSES",
    "AuditRow",
    "JOB_KINDS",
    "JOB_STATUSES",
    "JOB_TABLES",
    "JobRow",
]

AUDIT_STATUSES: tuple[str, ...] = tuple(AuditState)  # the CHECK lists them in lifecycle order
JOB_KINDS = ("audit", "replay", "finalize")
JOB_STATUSES = ("queued", "leased", "done", "failed", "dead")
JOB_TABLES = ("audits", "jobs")


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def _text(name: str, *, nullable: bool = False, index: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.Text, nullable=nullable, index=index)


class AuditRow(SQLModel, table=True):
    """One requested audit and where it stands."""

    __tablename__ = "audits"
    __table_args__ = (
        sa.CheckConstraint(f"status IN {_in(AUDIT_STATUSES)}", name="ck_audits_status"),
        sa.UniqueConstraint("idempotency_key", name="uq_audits_idempotency_key"),
        # keyset pages, newest first, per tenant and per tenant and requester
        sa.Index("ix_audits_tenant_created", "tenant_id", "created_at", "id"),
        sa.Index(
            "ix_audits_tenant_requester_created", "tenant_id", "requester", "created_at", "id"
        ),
    )

    id: str = Field(sa_column=sa.Column("id", sa.Text, primary_key=True))
    tenant_id: str = Field(sa_column=_text("tenant_id", index=True))
    specimen_id: str = Field(sa_column=_text("specimen_id", index=True))
    requester: str = Field(sa_column=_text("requester", index=True))
    purpose: str = Field(sa_column=_text("purpose"))
    request_json: str = Field(sa_column=_text("request_json"))
    status: str = Field(sa_column=_text("status"))
    progress_done: int = Field(sa_column=sa.Column("progress_done", sa.Integer, nullable=False))
    progress_total: int = Field(sa_column=sa.Column("progress_total", sa.Integer, nullable=False))
    classification: str | None = Field(
        default=None, sa_column=_text("classification", nullable=True)
    )
    auditability: str | None = Field(default=None, sa_column=_text("auditability", nullable=True))
    failure_code: str | None = Field(default=None, sa_column=_text("failure_code", nullable=True))
    certificate_json: str | None = Field(
        default=None, sa_column=_text("certificate_json", nullable=True)
    )
    ledger_index: int | None = Field(
        default=None, sa_column=sa.Column("ledger_index", sa.BigInteger, nullable=True)
    )
    idempotency_key: str | None = Field(
        default=None, sa_column=_text("idempotency_key", nullable=True)
    )
    created_at: str = Field(sa_column=_text("created_at", index=True))
    updated_at: str = Field(sa_column=_text("updated_at"))


class JobRow(SQLModel, table=True):
    """One unit of work of an audit, claimed by a worker under a lease.

    ``fencing_token`` grows by one at every claim (and at cancellation); a commit is
    accepted only with the current token, so a worker paused past its lease cannot
    overwrite its successor's result.
    """

    __tablename__ = "jobs"
    __table_args__ = (
        sa.CheckConstraint(f"kind IN {_in(JOB_KINDS)}", name="ck_jobs_kind"),
        sa.CheckConstraint(f"status IN {_in(JOB_STATUSES)}", name="ck_jobs_status"),
        sa.CheckConstraint("attempts >= 0 AND max_attempts >= 1", name="ck_jobs_attempts"),
        sa.UniqueConstraint("idempotency_key", name="uq_jobs_idempotency_key"),
        sa.Index("ix_jobs_claim", "status", "available_at"),
    )

    id: str = Field(sa_column=sa.Column("id", sa.Text, primary_key=True))
    audit_id: str = Field(
        sa_column=sa.Column(
            "audit_id",
            sa.Text,
            sa.ForeignKey("audits.id", name="fk_jobs_audit"),
            nullable=False,
            index=True,
        )
    )
    kind: str = Field(sa_column=_text("kind"))
    payload_json: str = Field(sa_column=_text("payload_json"))
    status: str = Field(sa_column=_text("status"))
    attempts: int = Field(sa_column=sa.Column("attempts", sa.Integer, nullable=False))
    max_attempts: int = Field(sa_column=sa.Column("max_attempts", sa.Integer, nullable=False))
    lease_owner: str | None = Field(default=None, sa_column=_text("lease_owner", nullable=True))
    lease_expires_at: str | None = Field(
        default=None, sa_column=_text("lease_expires_at", nullable=True)
    )
    fencing_token: int = Field(sa_column=sa.Column("fencing_token", sa.Integer, nullable=False))
    idempotency_key: str = Field(sa_column=_text("idempotency_key"))
    result_json: str | None = Field(default=None, sa_column=_text("result_json", nullable=True))
    error_code: str | None = Field(default=None, sa_column=_text("error_code", nullable=True))
    available_at: str = Field(sa_column=_text("available_at"))
    created_at: str = Field(sa_column=_text("created_at"))
    updated_at: str = Field(sa_column=_text("updated_at"))
