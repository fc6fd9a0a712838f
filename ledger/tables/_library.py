"""The specimen library's table: ``library_tags``, tags on sealed specimens. Metadata only.

Revision ``ledger/migrations/versions/0006_library.py`` creates it; ``enclave.release``
tags and selects with it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["LIBRARY_TABLES", "LibraryTagRow"]


class LibraryTagRow(SQLModel, table=True):
    """One tag on one sealed specimen."""

    __tablename__ = "library_tags"
    __table_args__ = (sa.Index("ix_library_tags_tag", "tag"),)

    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, primary_key=True))
    tag: str = Field(sa_column=sa.Column("tag", sa.Text, primary_key=True))
    tagged_at: str = Field(sa_column=sa.Column("tagged_at", sa.Text, nullable=False))


LIBRARY_TABLES: tuple[str, ...] = ("library_tags",)
