"""Core statement forms the ledger's two database dialects spell differently."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["insert_new"]


def insert_new(conn: sa.Connection, table: sa.Table) -> sa.Insert:
    """``INSERT ... ON CONFLICT DO NOTHING``: a row whose key is recorded is left as it is.

    Both dialects have the clause but SQLAlchemy builds it per dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()
