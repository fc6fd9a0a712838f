"""The signed documents' tables: certificates and release reports. Metadata only.

The envelopes themselves: certificates carry digests and bounded numbers, reports
certificate digests and labels, never payload content. Revision
``ledger/migrations/versions/0009_documents.py`` creates them; ``ledger._documents``
stores and reads them.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["DOCUMENT_TABLES", "CertificateRow", "ReleaseReportRow"]


class CertificateRow(SQLModel, table=True):
    """One audit's signed certificate, written right after its ``certificate.issued``."""

    __tablename__ = "certificates"
    __table_args__ = (
        sa.Index("ix_certificates_envelope_digest", "envelope_digest", unique=True),
        sa.Index("ix_certificates_tenant", "tenant_id", "issued_at", "audit_id"),
    )

    audit_id: str = Field(sa_column=sa.Column("audit_id", sa.Text, primary_key=True))
    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, nullable=False))
    tenant_id: str = Field(sa_column=sa.Column("tenant_id", sa.Text, nullable=False))
    envelope_digest: str = Field(sa_column=sa.Column("envelope_digest", sa.Text, nullable=False))
    classification: str = Field(sa_column=sa.Column("classification", sa.Text, nullable=False))
    issued_at: str = Field(sa_column=sa.Column("issued_at", sa.Text, nullable=False))
    envelope_json: str = Field(sa_column=sa.Column("envelope_json", sa.Text, nullable=False))


class ReleaseReportRow(SQLModel, table=True):
    """One signed release report, written right after its ``release.reported`` entry."""

    __tablename__ = "release_reports"
    __table_args__ = (
        sa.Index("ix_release_reports_envelope_digest", "envelope_digest", unique=True),
        sa.Index("ix_release_reports_issued", "issued_at", "report_id"),
        sa.Index("ix_release_reports_tenant", "tenant_id", "issued_at", "report_id"),
    )

    report_id: str = Field(sa_column=sa.Column("report_id", sa.Text, primary_key=True))
    envelope_digest: str = Field(sa_column=sa.Column("envelope_digest", sa.Text, nullable=False))
    selection_digest: str = Field(sa_column=sa.Column("selection_digest", sa.Text, nullable=False))
    issued_at: str = Field(sa_column=sa.Column("issued_at", sa.Text, nullable=False))
    gate_passed: bool = Field(sa_column=sa.Column("gate_passed", sa.Boolean, nullable=False))
    specimens: int = Field(sa_column=sa.Column("specimens", sa.Integer, nullable=False))
    # NULL: its specimens span tenants
    tenant_id: str | None = Field(
        default=None, sa_column=sa.Column("tenant_id", sa.Text, nullable=True)
    )
    envelope_json: str = Field(sa_column=sa.Column("envelope_json", sa.Text, nullable=False))


DOCUMENT_TABLES: tuple[str, ...] = ("certificates", "release_reports")
