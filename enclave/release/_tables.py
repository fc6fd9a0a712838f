"""The release package's table: ``library_tags``, tags on sealed specimens, created by
the Alembic revision ``ledger/migrations/versions/0006_library.py`` (this definition
mirrors it; a test compares). The signed documents' tables are the ledger's
(``ledger/_documents.py``)."""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["LIBRARY_METADATA", "library_tags"]

LIBRARY_METADATA = sa.MetaData()

library_tags = sa.Table(
    "library_tags",
    LIBRARY_METADATA,
    sa.Column("specimen_id", sa.Text, primary_key=True),
    sa.Column("tag", sa.Text, primary_key=True),
    sa.Column("tagged_at", sa.Text, nullable=False),
    sa.Index("ix_library_tags_tag", "tag"),
)
