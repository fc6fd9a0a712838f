"""What every registry module shares: the Core table behind a table class."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["table_of"]


def table_of(model: Any) -> sa.Table:
    """The Core ``Table`` behind a SQLModel table class (``__table__`` is untyped)."""
    table = model.__table__
    assert isinstance(table, sa.Table)
    return table
