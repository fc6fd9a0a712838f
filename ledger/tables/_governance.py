"""Governance tables: intervention policies and analysts. Metadata only.

Revision ``ledger/migrations/versions/0003_governance.py`` creates them;
``enclave.governance`` reads and writes them. Times are ISO-8601 UTC text; JSON columns
hold canonical JSON text.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["GOVERNANCE_TABLES", "AnalystRow", "InterventionPolicyRow"]

_STATUSES = "('draft', 'validated', 'active', 'retired')"
_STRATEGIES = "('nullify', 'replace', 'perturb', 'revision')"


class InterventionPolicyRow(SQLModel, table=True):
    """One version of a declared intervention policy and where it stands."""

    __tablename__ = "intervention_policies"
    __table_args__ = (
        sa.CheckConstraint(f"status IN {_STATUSES}", name="ck_intervention_policies_status"),
        sa.CheckConstraint(f"strategy IN {_STRATEGIES}", name="ck_intervention_policies_strategy"),
        sa.CheckConstraint("version >= 1", name="ck_intervention_policies_version"),
        sa.Index("ix_intervention_policies_match", "tenant", "tool", "field", "status"),
    )

    id: str = Field(sa_column=sa.Column("id", sa.Text, primary_key=True))
    version: int = Field(
        sa_column=sa.Column("version", sa.Integer, primary_key=True, autoincrement=False)
    )
    tenant: str = Field(sa_column=sa.Column("tenant", sa.Text, nullable=False))
    tool: str = Field(sa_column=sa.Column("tool", sa.Text, nullable=False))
    schema_id: str = Field(sa_column=sa.Column("schema_id", sa.Text, nullable=False))
    schema_version: str = Field(sa_column=sa.Column("schema_version", sa.Text, nullable=False))
    field: str = Field(sa_column=sa.Column("field", sa.Text, nullable=False))
    strategy: str = Field(sa_column=sa.Column("strategy", sa.Text, nullable=False))
    params_json: str = Field(sa_column=sa.Column("params_json", sa.Text, nullable=False))
    provider: str = Field(sa_column=sa.Column("provider", sa.Text, nullable=False))
    status: str = Field(sa_column=sa.Column("status", sa.Text, nullable=False))
    source_digest: str = Field(sa_column=sa.Column("source_digest", sa.Text, nullable=False))
    created_at: str = Field(sa_column=sa.Column("created_at", sa.Text, nullable=False))
    updated_at: str = Field(sa_column=sa.Column("updated_at", sa.Text, nullable=False))
    activated_at: str | None = Field(default=None, sa_column=sa.Column("activated_at", sa.Text))
    retired_at: str | None = Field(default=None, sa_column=sa.Column("retired_at", sa.Text))


class AnalystRow(SQLModel, table=True):
    """An analyst: tenant, roles and the SHA-256 of their token (never the token)."""

    __tablename__ = "analysts"
    __table_args__ = (sa.UniqueConstraint("token_hash", name="uq_analysts_token_hash"),)

    name: str = Field(sa_column=sa.Column("name", sa.Text, primary_key=True))
    tenant: str = Field(sa_column=sa.Column("tenant", sa.Text, nullable=False))
    roles_json: str = Field(sa_column=sa.Column("roles_json", sa.Text, nullable=False))
    token_hash: str = Field(sa_column=sa.Column("token_hash", sa.Text, nullable=False))
    created_at: str = Field(sa_column=sa.Column("created_at", sa.Text, nullable=False))
    disabled: bool = Field(sa_column=sa.Column("disabled", sa.Boolean, nullable=False))


GOVERNANCE_TABLES: tuple[str, ...] = ("intervention_policies", "analysts")
