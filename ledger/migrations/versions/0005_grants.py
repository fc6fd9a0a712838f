"""Grants minted by the service: worker credentials and admission bindings.

The table definitions mirror ``ledger/tables/_grants.py``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker_tokens",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("token_hash", sa.Text, nullable=False, unique=True),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_table(
        "admissions",
        sa.Column("audit_id", sa.Text, primary_key=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("specimen_id", sa.Text, nullable=False),
        sa.Column("admitted_at", sa.Text, nullable=False),
        sa.Column("mac", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("admissions")
    op.drop_table("worker_tokens")
