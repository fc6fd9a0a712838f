"""Engines for the ledger, chosen by URL (SQLite by default, PostgreSQL for many hosts).

Every engine is built with ``hide_parameters=True`` so a database error never echoes a
bound value. SQLite connections get, on connect:

* ``journal_mode=WAL`` (readers never block the writer),
* ``synchronous=FULL`` (a committed append survives power loss),
* ``secure_delete=ON`` (deleted pages are zeroed, not left readable in the file),
* ``foreign_keys=ON`` and ``busy_timeout`` (writers wait instead of failing).

Pool: up to ``POOL_SIZE`` connections stay open once used, one for each thread a
service process runs queries on (its 8 request threads and 2 list threads,
``enclave.service._state``), so under load no request waits for a connection and none
opens one — waiting is what turned a burst of listings into 30 s ``/whoami`` answers
and 503s, and opening one per request cost PostgreSQL a backend start. Up to
``MAX_OVERFLOW`` more are opened for other callers' bursts and closed when returned.
``POOL_TIMEOUT`` bounds the wait should it ever happen.

The pysqlite driver's own transaction handling is switched off (``isolation_level =
None``) and ``BEGIN`` is emitted by the engine: ``BEGIN IMMEDIATE`` when a connection
carries the execution option ``ledger_write=True`` (the write lock is taken at the
start, so the chain tip read inside the transaction cannot go stale), plain ``BEGIN``
otherwise.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from ._errors import LedgerUnavailable

__all__ = ["make_engine", "BUSY_TIMEOUT_MS", "MAX_OVERFLOW", "POOL_SIZE", "WRITE_OPTION"]

BUSY_TIMEOUT_MS = 30_000
POOL_SIZE = 10
MAX_OVERFLOW = 40
POOL_TIMEOUT_S = 10
WRITE_OPTION = "ledger_write"


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (any SQLAlchemy URL) with the ledger's safety settings."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError("not a database URL") from exc
    kwargs: dict[str, Any] = {"hide_parameters": True, "future": True}
    if not (parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")):
        kwargs.update(pool_size=POOL_SIZE, max_overflow=MAX_OVERFLOW, pool_timeout=POOL_TIMEOUT_S)
    if parsed.get_backend_name() == "postgresql":
        kwargs["pool_pre_ping"] = True
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (NoSuchModuleError, ImportError) as exc:
        raise LedgerUnavailable("no database driver for this URL scheme") from exc
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA secure_delete = ON")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")
