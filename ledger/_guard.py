"""Translate database exceptions at the ledger boundary.

SQLAlchemy's ``hide_parameters`` keeps bound values out of *its* message, but the
driver's own text can still carry them (PostgreSQL's ``DETAIL: Key (id)=(...) already
exists``). So the original exception is not chained at all: the ledger error's
``__cause__`` is a ``DatabaseFault`` naming only the operation, the exception class and
the SQLSTATE / SQLite error name, and the error is raised outside the ``except`` block
so ``__context__`` stays empty too.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from sqlalchemy import exc as sa_exc

from ._errors import Conflict, LedgerError, LedgerUnavailable

__all__ = ["DatabaseFault", "guarded", "translate"]

P = ParamSpec("P")
R = TypeVar("R")


class DatabaseFault(Exception):
    """Operator diagnostics for a database failure: names and codes, never values."""


def _code(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    if orig is None:
        return "-"
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(sqlstate, str):
        return f"sqlstate {sqlstate}"
    if isinstance(orig, sqlite3.Error):
        name = getattr(orig, "sqlite_errorname", None)
        if isinstance(name, str):
            return name
    return type(orig).__name__


def translate(exc: BaseException, operation: str) -> LedgerError:
    """A ledger error for ``exc`` whose text and cause chain carry no bound values."""
    fault = DatabaseFault(f"{operation}: {type(exc).__name__} ({_code(exc)})")
    failure: LedgerError
    if isinstance(exc, sa_exc.IntegrityError):
        failure = Conflict(f"{operation}: the write conflicts with recorded data")
    else:
        failure = LedgerUnavailable(f"{operation}: the ledger database is unavailable")
    failure.__cause__ = fault
    failure.__suppress_context__ = True
    return failure


def guarded(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a ledger method so no database exception escapes it."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            failure: LedgerError
            try:
                return fn(*args, **kwargs)
            except (sa_exc.SQLAlchemyError, sqlite3.Error) as exc:
                failure = translate(exc, operation)
            except Exception as exc:  # noqa: BLE001 - only driver errors are converted
                if not _is_driver_error(exc):
                    raise
                failure = translate(exc, operation)
            raise failure

        return inner

    return decorate


def _is_driver_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("psycopg", "sqlite3", "sqlalchemy"))
