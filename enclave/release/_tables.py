"""The library's table: tags on sealed specimens. Metadata only.

Created by the Alembic revision ``ledger/migrations/versions/0006_library.py``; these
definitions mirror it (a test compares them).
"""

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
