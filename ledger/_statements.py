"""Building blocks of the ledger's Core statements: its tables, loaded on first use, and
the forms its two database dialects spell differently."""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["ENTRY_COLUMNS", "insert_new", "select_entries", "select_tip", "table"]


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
    entries = table("EntryRow")
    return sa.select(*(entries.c[name] for name in ENTRY_COLUMNS))


def select_tip() -> sa.Select[Any]:
    """The chain tip's length and head hash."""
    tip = table("TipRow")
    return sa.select(tip.c.length, tip.c.head_hash).where(tip.c.id == 1)


@functools.cache
def table(model: str) -> sa.Table:
    """The Core table of the SQLModel class ``model`` in ``ledger._models``.

    The classes (and sqlmodel itself) load on first use, not with the ledger: a CLI
    command that only lists specimens never needs them."""
    from . import _models

    return _models.table_of(getattr(_models, model))
