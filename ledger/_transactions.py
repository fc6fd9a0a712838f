"""Transactions on the ledger's database, for the ledger, governance and the job queue.

``write`` takes the write lock up front (SQLite: ``BEGIN IMMEDIATE``, see
``ledger._engine``); ``read(snapshot=True)`` reads one consistent snapshot (PostgreSQL:
``REPEATABLE READ``; a SQLite transaction already is one).

No database exception leaves: an integrity clash becomes ``Conflict``, anything else
``LedgerUnavailable``. SQLAlchemy's ``hide_parameters`` keeps bound values out of *its*
message, but the driver's own text can still carry them (PostgreSQL's ``DETAIL: Key
(id)=(...) already exists``). So the original exception is not chained at all: neither
``__cause__`` nor ``__context__`` refers to it. Operators get the exception class and
the SQLSTATE / SQLite error name in a log record, never its text.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from ._engine import WRITE_OPTION
from ._errors import Conflict, LedgerError, LedgerUnavailable, raise_unchained

__all__ = ["guarded", "is_driver_error", "read", "translate", "write"]

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("ledger.database")


def _code(exc: BaseException) -> str:
    orig = getattr(exc, "orig", exc)
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(sqlstate, str):
        return f"sqlstate {sqlstate}"
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(orig, sqlite3.Error) and isinstance(name, str):
        return name
    return type(orig).__name__


def is_driver_error(exc: BaseException) -> bool:
    """An exception from the database driver (or SQLAlchemy): its text may hold values."""
    module = type(exc).__module__ or ""
    return module.startswith(("psycopg", "sqlite3", "sqlalchemy"))


def translate(exc: BaseException, operation: str) -> LedgerError:
    """A ledger error for ``exc`` whose text names no value; logs names and codes only."""
    log.warning(
        "database failure in %s: %s (%s)",
        operation,
        type(exc).__name__,
        _code(exc),
        extra={"db_operation": operation, "db_error": type(exc).__name__, "db_code": _code(exc)},
    )
    if isinstance(exc, sa_exc.IntegrityError | sqlite3.IntegrityError):
        return Conflict(f"{operation}: the write conflicts with recorded data")
    return LedgerUnavailable(f"{operation}: the ledger database is unavailable")


@contextmanager
def _translated(operation: str) -> Iterator[None]:
    failure: LedgerError | None = None
    try:
        yield
    except (sa_exc.SQLAlchemyError, sqlite3.Error) as exc:
        failure = translate(exc, operation)
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        failure = translate(exc, operation)
    if failure is not None:
        raise_unchained(failure)


@contextmanager
def write(engine: Engine, *, operation: str = "write") -> Iterator[sa.Connection]:
    """One write transaction; commits when the block ends without an exception."""
    with _translated(operation), engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            yield conn


@contextmanager
def read(
    engine: Engine, *, snapshot: bool = False, operation: str = "read"
) -> Iterator[sa.Connection]:
    """One read; ``snapshot`` when several statements must agree (one transaction).

    A plain read on PostgreSQL runs in autocommit: under READ COMMITTED every statement
    sees its own snapshot inside a transaction too, so ``BEGIN`` and ``COMMIT`` would be
    two round trips that change nothing. SQLite keeps its transaction, the snapshot of
    a WAL reader."""
    with _translated(operation), engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ" if snapshot else "AUTOCOMMIT")
        with conn.begin():
            yield conn


def guarded(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function so no database exception escapes it (the standard library's
    ``sqlite3`` read path of ``ledger._summaries`` included)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            with _translated(operation):
                return fn(*args, **kwargs)
            raise AssertionError("unreachable")  # pragma: no cover - for type checkers

        return inner

    return decorate
