"""Certificates and release reports in the ledger's database (signed envelopes only).

A worker on another host shares nothing with the requester but the database: the
signed certificate of each audit (``certificates``, one row per audit, written with its
``certificate.issued`` entry) and each signed release report (``release_reports``,
written with its ``release.reported`` entry) live here; files in a home are exports. A
certificate holds digests, labels and bounded numbers, a report certificate digests and
labels: never payload content. ``release_reports.tenant_id`` is the one tenant all the
report's specimens belong to, NULL when they span tenants. The definitions mirror
``ledger/tables/_documents.py``.

Revision ID: 0009_documents
Revises: 0008_payload_store
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_documents"
down_revision = "0008_payload_store"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "certificates",
        sa.Column("audit_id", sa.Text, primary_key=True),
        sa.Column("specimen_id", sa.Text, nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("envelope_digest", sa.Text, nullable=False),
        sa.Column("classification", sa.Text, nullable=False),
        sa.Column("issued_at", sa.Text, nullable=False),
        sa.Column("envelope_json", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_certificates_envelope_digest", "certificates", ["envelope_digest"], unique=True
    )
    op.create_index(
        "ix_certificates_tenant", "certificates", ["tenant_id", "issued_at", "audit_id"]
    )
    op.create_table(
        "release_reports",
        sa.Column("report_id", sa.Text, primary_key=True),
        sa.Column("envelope_digest", sa.Text, nullable=False),
        sa.Column("selection_digest", sa.Text, nullable=False),
        sa.Column("issued_at", sa.Text, nullable=False),
        sa.Column("gate_passed", sa.Boolean, nullable=False),
        sa.Column("specimens", sa.Integer, nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=True),
        sa.Column("envelope_json", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_release_reports_envelope_digest", "release_reports", ["envelope_digest"], unique=True
    )
    op.create_index("ix_release_reports_issued", "release_reports", ["issued_at", "report_id"])
    op.create_index(
        "ix_release_reports_tenant", "release_reports", ["tenant_id", "issued_at", "report_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_release_reports_tenant", table_name="release_reports")
    op.drop_index("ix_release_reports_issued", table_name="release_reports")
    op.drop_index("ix_release_reports_envelope_digest", table_name="release_reports")
    op.drop_table("release_reports")
    op.drop_index("ix_certificates_tenant", table_name="certificates")
    op.drop_index("ix_certificates_envelope_digest", table_name="certificates")
    op.drop_table("certificates")
