"""Governance: intervention policies (versioned, with a lifecycle) and analysts.

An independent branch from the ledger core: ``Ledger.migrate()`` upgrades all heads.
The table definitions mirror ``ledger/tables/_governance.py``.

Revision ID: 0003
Revises: 0001
Create Date: 2025-01-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "intervention_policies",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("tenant", sa.Text, nullable=False),
        sa.Column("tool", sa.Text, nullable=False),
        sa.Column("schema_id", sa.Text, nullable=False),
        sa.Column("schema_version", sa.Text, nullable=False),
        sa.Column("field", sa.Text, nullable=False),
        sa.Column("strategy", sa.Text, nullable=False),
        sa.Column("params_json", sa.Text, nullable=False),
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("source_digest", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("activated_at", sa.Text),
        sa.Column("retired_at", sa.Text),
        sa.CheckConstraint(
            "status IN ('draft', 'validated', 'active', 'retired')",
            name="ck_intervention_policies_status",
        ),
        sa.CheckConstraint(
            "strategy IN ('nullify', 'replace', 'perturb', 'revision')",
            name="ck_intervention_policies_strategy",
        ),
        sa.CheckConstraint("version >= 1", name="ck_intervention_policies_version"),
    )
    op.create_index(
        "ix_intervention_policies_match",
        "intervention_policies",
        ["tenant", "tool", "field", "status"],
    )
    op.create_table(
        "analysts",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("tenant", sa.Text, nullable=False),
        sa.Column("roles_json", sa.Text, nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_analysts_token_hash"),
    )


def downgrade() -> None:
    op.drop_table("analysts")
    op.drop_index("ix_intervention_policies_match", table_name="intervention_policies")
    op.drop_table("intervention_policies")
