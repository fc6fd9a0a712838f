"""Building blocks of the ledger's Core statements: the forms its two database dialects
spell differently, and the chain reads every module shares.

The table registry (``ledger.tables``, and SQLModel with it) is imported inside these
functions, not with the module: a command that never runs a statement never loads it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["ENTRY_COLUMNS", "insert_new", "select_entries", "select_tip"]


def insert_new(conn: sa.Connection, table: sa.Table) -> sa.Insert:
    """``INSERT ... ON CONFLICT DO NOTHING``: a row whose key is recorded is left as it is.

    Both dialects have the clause but SQLAlchemy builds it per dialect."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing()
    return sqlite.insert(table).on_conflict_do_nothing()


ENTRY_COLUMNS = (
    "entry_index",
    "kind",
    "subject",
    "body_json",
    "prev_hash",
    "entry_hash",
    "recorded_at",
)


def select_entries() -> sa.Select[Any]:
    """``ledger_entries`` rows in ``EntryRecord`` order; add the conditions."""
    from .tables import EntryRow, table_of

    entries = table_of(EntryRow)
    return sa.select(*(entries.c[name] for name in ENTRY_COLUMNS))


def select_tip() -> sa.Select[Any]:
    """The chain tip's length and head hash."""
    from .tables import TipRow, table_of

    tip = table_of(TipRow)
    return sa.select(tip.c.length, tip.c.head_hash).where(tip.c.id == 1)
