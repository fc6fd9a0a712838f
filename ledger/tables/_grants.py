"""What the grant route keeps: worker credentials and admission bindings. Metadata only.

Only a token's SHA-256 is stored, and a binding's HMAC (``enclave.service`` explains
both). Revision ``ledger/migrations/versions/0005_grants.py`` creates the tables.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["GRANT_TABLES", "AdmissionRow", "WorkerTokenRow"]


class WorkerTokenRow(SQLModel, table=True):
    """A replay worker that may ask for grants."""

    __tablename__ = "worker_tokens"

    name: str = Field(sa_column=sa.Column("name", sa.Text, primary_key=True))
    token_hash: str = Field(sa_column=sa.Column("token_hash", sa.Text, nullable=False, unique=True))
    created_at: str = Field(sa_column=sa.Column("created_at", sa.Text, nullable=False))
    revoked: bool = Field(sa_column=sa.Column("revoked", sa.Boolean, nullable=False))


class AdmissionRow(SQLModel, table=True):
    """An admitted audit bound to its tenant and specimen by ``mac``."""

    __tablename__ = "admissions"

    audit_id: str = Field(sa_column=sa.Column("audit_id", sa.Text, primary_key=True))
    tenant_id: str = Field(sa_column=sa.Column("tenant_id", sa.Text, nullable=False))
    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, nullable=False))
    admitted_at: str = Field(sa_column=sa.Column("admitted_at", sa.Text, nullable=False))
    mac: str = Field(sa_column=sa.Column("mac", sa.Text, nullable=False))


GRANT_TABLES: tuple[str, ...] = ("worker_tokens", "admissions")
