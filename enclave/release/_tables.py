"""The release package's tables. Metadata and signed documents only.

``library_tags``: tags on sealed specimens, created by the Alembic revision
``ledger/migrations/versions/0006_library.py``. ``certificates`` and ``release_reports``:
the signed DSSE envelopes themselves (certificates carry digests and bounded numbers,
reports carry certificate digests and labels: never payload content), created by
``0009_documents.py``. These definitions mirror the migrations (a test compares them).
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = [
    "DOCUMENTS_METADATA",
    "LIBRARY_METADATA",
    "certificates",
    "library_tags",
    "release_reports",
]

LIBRARY_METADATA = sa.MetaData()

library_tags = sa.Table(
    "library_tags",
    LIBRARY_METADATA,
    sa.Column("specimen_id", sa.Text, primary_key=True),
    sa.Column("tag", sa.Text, primary_key=True),
    sa.Column("tagged_at", sa.Text, nullable=False),
    sa.Index("ix_library_tags_tag", "tag"),
)

DOCUMENTS_METADATA = sa.MetaData()

certificates = sa.Table(
    "certificates",
    DOCUMENTS_METADATA,
    sa.Column("audit_id", sa.Text, primary_key=True),
    sa.Column("specimen_id", sa.Text, nullable=False),
    sa.Column("tenant_id", sa.Text, nullable=False),
    sa.Column("envelope_digest", sa.Text, nullable=False),
    sa.Column("classification", sa.Text, nullable=False),
    sa.Column("issued_at", sa.Text, nullable=False),
    sa.Column("envelope_json", sa.Text, nullable=False),
    sa.Index("ix_certificates_envelope_digest", "envelope_digest", unique=True),
    sa.Index("ix_certificates_tenant", "tenant_id", "issued_at", "audit_id"),
)

release_reports = sa.Table(
    "release_reports",
    DOCUMENTS_METADATA,
    sa.Column("report_id", sa.Text, primary_key=True),
    sa.Column("envelope_digest", sa.Text, nullable=False),
    sa.Column("selection_digest", sa.Text, nullable=False),
    sa.Column("issued_at", sa.Text, nullable=False),
    sa.Column("gate_passed", sa.Boolean, nullable=False),
    sa.Column("specimens", sa.Integer, nullable=False),
    sa.Column("tenant_id", sa.Text, nullable=True),  # NULL: its specimens span tenants
    sa.Column("envelope_json", sa.Text, nullable=False),
    sa.Index("ix_release_reports_envelope_digest", "envelope_digest", unique=True),
    sa.Index("ix_release_reports_issued", "issued_at", "report_id"),
    sa.Index("ix_release_reports_tenant", "tenant_id", "issued_at", "report_id"),
)
