"""Durable audits and their jobs (claimed by workers under leases, fenced commits).

Mirrors ``ledger/tables/_jobs.py``. Metadata only: no captured payload content.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_AUDIT_STATUSES = "('QUEUED', 'RUNNING', 'FINALIZING', 'COMPLETED', 'FAILED', 'CANCELLED')"
_JOB_KINDS = "('audit', 'replay', 'finalize')"
_JOB_STATUSES = "('queued', 'leased', 'done', 'failed', 'dead')"


def upgrade() -> None:
    op.create_table(
        "audits",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("specimen_id", sa.Text, nullable=False),
        sa.Column("requester", sa.Text, nullable=False),
        sa.Column("purpose", sa.Text, nullable=False),
        sa.Column("request_json", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("progress_done", sa.Integer, nullable=False),
        sa.Column("progress_total", sa.Integer, nullable=False),
        sa.Column("classification", sa.Text),
        sa.Column("auditability", sa.Text),
        sa.Column("failure_code", sa.Text),
        sa.Column("certificate_json", sa.Text),
        sa.Column("ledger_index", sa.BigInteger),
        sa.Column("idempotency_key", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.CheckConstraint(f"status IN {_AUDIT_STATUSES}", name="ck_audits_status"),
        sa.UniqueConstraint("idempotency_key", name="uq_audits_idempotency_key"),
    )
    op.create_index("ix_audits_tenant_id", "audits", ["tenant_id"])
    op.create_index("ix_audits_specimen_id", "audits", ["specimen_id"])
    op.create_index("ix_audits_requester", "audits", ["requester"])
    op.create_index("ix_audits_created_at", "audits", ["created_at"])
    op.create_table(
        "jobs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("audit_id", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("payload_json", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.Text),
        sa.Column("lease_expires_at", sa.Text),
        sa.Column("fencing_token", sa.Integer, nullable=False),
        sa.Column("idempotency_key", sa.Text, nullable=False),
        sa.Column("result_json", sa.Text),
        sa.Column("error_code", sa.Text),
        sa.Column("available_at", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(["audit_id"], ["audits.id"], name="fk_jobs_audit"),
        sa.CheckConstraint(f"kind IN {_JOB_KINDS}", name="ck_jobs_kind"),
        sa.CheckConstraint(f"status IN {_JOB_STATUSES}", name="ck_jobs_status"),
        sa.CheckConstraint("attempts >= 0 AND max_attempts >= 1", name="ck_jobs_attempts"),
        sa.UniqueConstraint("idempotency_key", name="uq_jobs_idempotency_key"),
    )
    op.create_index("ix_jobs_audit_id", "jobs", ["audit_id"])
    op.create_index("ix_jobs_claim", "jobs", ["status", "available_at"])


def downgrade() -> None:
    op.drop_table("jobs")
    op.drop_table("audits")
