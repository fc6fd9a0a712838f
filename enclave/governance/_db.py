"""Transactions on the ledger's database for the governance tables.

Database exceptions never leave: an integrity clash becomes ``Conflict`` (a ledger
error the callers translate), anything else ``InfrastructureError`` — neither carries
bound values (the engine hides parameters, and we do not forward the text).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger import Conflict
from ledger._engine import WRITE_OPTION

from .._errors import InfrastructureError

__all__ = ["read", "write"]


@contextmanager
def write(engine: Engine) -> Iterator[sa.Connection]:
    """One write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn
    except sa.exc.IntegrityError as exc:
        raise Conflict("the write clashes with a recorded row") from exc
    except sa.exc.SQLAlchemyError as exc:
        raise InfrastructureError("the governance tables are unavailable") from exc


@contextmanager
def read(engine: Engine) -> Iterator[sa.Connection]:
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    except sa.exc.SQLAlchemyError as exc:
        raise InfrastructureError("the governance tables are unavailable") from exc
