"""Governance tables: intervention policies and analysts. Metadata only.

They live on their own ``MetaData`` (not the ledger core's) and are created by the
Alembic revision ``ledger/migrations/versions/0003_governance.py``; a test checks that
the migrated schema and these definitions agree. Times are ISO-8601 UTC text; JSON
columns hold canonical JSON text.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["GOVERNANCE_METADATA", "GOVERNANCE_TABLES", "analysts", "intervention_policies"]

GOVERNANCE_METADATA = sa.MetaData()

_STATUSES = "('draft', 'validated', 'active', 'retired')"
_STRATEGIES = "('nullify', 'replace', 'perturb', 'revision')"

intervention_policies = sa.Table(
    "intervention_policies",
    GOVERNANCE_METADATA,
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
    sa.CheckConstraint(f"status IN {_STATUSES}", name="ck_intervention_policies_status"),
    sa.CheckConstraint(f"strategy IN {_STRATEGIES}", name="ck_intervention_policies_strategy"),
    sa.CheckConstraint("version >= 1", name="ck_intervention_policies_version"),
    sa.Index("ix_intervention_policies_match", "tenant", "tool", "field", "status"),
)

analysts = sa.Table(
    "analysts",
    GOVERNANCE_METADATA,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("roles_json", sa.Text, nullable=False),
    sa.Column("token_hash", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("disabled", sa.Boolean, nullable=False),
    sa.UniqueConstraint("token_hash", name="uq_analysts_token_hash"),
)

GOVERNANCE_TABLES: tuple[str, ...] = ("intervention_policies", "analysts")
