"""Ledger core: tenants, runs, specimens, steps, fields, hash-linked entries, chain tip.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_CLASSIFICATIONS = "('public', 'internal', 'confidential', 'restricted')"
GENESIS_HASH = "sha256:" + "0" * 64


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.Text, primary_key=True),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("agent_name", sa.Text, nullable=False),
        sa.Column("agent_version", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("ended_at", sa.Text),
        sa.Column("failure_code", sa.Text),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name="fk_runs_tenant"),
        sa.CheckConstraint("status IN ('running', 'incomplete', 'sealed')", name="ck_runs_status"),
    )
    op.create_index("ix_runs_tenant_id", "runs", ["tenant_id"])
    op.create_table(
        "specimens",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("agent_name", sa.Text, nullable=False),
        sa.Column("agent_version", sa.Text, nullable=False),
        sa.Column("manifest_json", sa.Text, nullable=False),
        sa.Column("manifest_digest", sa.Text, nullable=False),
        sa.Column("adapter_name", sa.Text, nullable=False),
        sa.Column("adapter_version", sa.Text, nullable=False),
        sa.Column("adapter_strategies", sa.Text, nullable=False),
        sa.Column("adapter_source_ref", sa.Text, nullable=False),
        sa.Column("highest_classification", sa.Text, nullable=False),
        sa.Column("retention_class", sa.Text, nullable=False),
        sa.Column("legal_hold", sa.Boolean, nullable=False),
        sa.Column("sealed_at", sa.Text, nullable=False),
        sa.Column("sealed_index", sa.BigInteger, nullable=False),
        sa.Column("erased", sa.Boolean, nullable=False),
        sa.Column("erased_at", sa.Text),
        sa.ForeignKeyConstraint(["id"], ["runs.id"], name="fk_specimens_run"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name="fk_specimens_tenant"),
        sa.CheckConstraint(
            f"highest_classification IN {_CLASSIFICATIONS}",
            name="ck_specimens_classification",
        ),
        sa.UniqueConstraint("sealed_index", name="uq_specimens_sealed_index"),
    )
    op.create_index("ix_specimens_tenant_id", "specimens", ["tenant_id"])
    op.create_index("ix_specimens_agent_name", "specimens", ["agent_name"])
    op.create_table(
        "steps",
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("call_id", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("alias", sa.Text),
        sa.Column("resolved", sa.Text),
        sa.Column("schema_id", sa.Text),
        sa.Column("schema_version", sa.Text),
        sa.Column("request_digest", sa.Text, nullable=False),
        sa.Column("response_digest", sa.Text, nullable=False),
        sa.Column("valid_time", sa.Text, nullable=False),
        sa.Column("observed_time", sa.Text, nullable=False),
        sa.Column("effect_token", sa.Text),
        sa.Column("effect_token_expires_at", sa.Text),
        sa.Column("effect_reverifiable", sa.Boolean),
        sa.Column("effect_live_state_fields", sa.Text),
        sa.ForeignKeyConstraint(["specimen_id"], ["specimens.id"], name="fk_steps_specimen"),
        sa.UniqueConstraint("specimen_id", "seq", name="uq_steps_seq"),
    )
    op.create_table(
        "fields",
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("side", sa.Text, nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("classification", sa.Text, nullable=False),
        sa.Column("retention", sa.Text, nullable=False),
        sa.Column("keyed_digest", sa.Text),
        sa.Column("payload_ref", sa.Text),
        sa.Column("live_state", sa.Boolean, nullable=False),
        sa.ForeignKeyConstraint(
            ["specimen_id", "seq"], ["steps.specimen_id", "steps.seq"], name="fk_fields_step"
        ),
        sa.UniqueConstraint("specimen_id", "seq", "side", "path", name="uq_fields_leaf"),
        sa.CheckConstraint("side IN ('request', 'response')", name="ck_fields_side"),
        sa.CheckConstraint(f"classification IN {_CLASSIFICATIONS}", name="ck_fields_class"),
        sa.CheckConstraint(
            "retention IN ('encrypted', 'digest', 'withheld')", name="ck_fields_retention"
        ),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("entry_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("body_json", sa.Text, nullable=False),
        sa.Column("prev_hash", sa.Text, nullable=False),
        sa.Column("entry_hash", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.Text, nullable=False),
        sa.UniqueConstraint("entry_hash", name="uq_ledger_entries_hash"),
    )
    op.create_index("ix_ledger_entries_kind", "ledger_entries", ["kind"])
    op.create_index("ix_ledger_entries_subject", "ledger_entries", ["subject"])
    tip = op.create_table(
        "ledger_tip",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("length", sa.BigInteger, nullable=False),
        sa.Column("head_hash", sa.Text, nullable=False),
        sa.CheckConstraint("id = 1", name="ck_ledger_tip_single"),
    )
    op.bulk_insert(tip, [{"id": 1, "length": 0, "head_hash": GENESIS_HASH}])


def downgrade() -> None:
    for table in ("ledger_tip", "ledger_entries", "fields", "steps", "specimens", "runs"):
        op.drop_table(table)
    op.drop_table("tenants")
