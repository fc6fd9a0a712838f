"""Database errors leave the ledger, governance and jobs without the driver's text.

PostgreSQL words a unique or foreign-key violation as ``DETAIL: Key (name)=(<value>)
...``: the bound value itself. Each path below makes the database refuse a write whose
key is a canary and checks that the error that comes out names no value, anywhere in
its cause/context chain or its formatted traceback, and holds no driver exception.
Real databases only: a SQLite file and a real PostgreSQL server.
"""

from __future__ import annotations

import sqlite3
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import BadInput, Home, Runtime
from enclave.governance import add_analyst
from enclave.jobs import claim, enqueue, fenced
from ledger import Conflict, LedgerError, LedgerUnavailable
from ledger.tables import AnalystRow, AuditRow, table_of
from ledger.transactions import read, write

audits = table_of(AuditRow)

# lower-case letters and dashes: a valid analyst name and run id, found verbatim in a DETAIL
CANARY = "canary-detail-7f3e91c2"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runtime]:
    home = Home.init(tmp_path / "home")
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        (home.root / "config.toml").write_text(
            f'[keys]\nprovider = "local"\n\n[ledger]\nurl = "{url}"\n'
        )
    rt = Runtime.open(home, env={})
    yield rt
    rt.close()


def error_chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo.extend([item.__cause__, item.__context__])
    return seen


def assert_carries_no_value(exc: BaseException) -> None:
    for item in error_chain(exc):
        assert not isinstance(item, sa.exc.SQLAlchemyError | sqlite3.Error)
        assert not type(item).__module__.startswith(("psycopg", "sqlalchemy", "sqlite3"))
        assert CANARY not in str(item)
        assert CANARY not in repr(item.args)
    assert CANARY not in "".join(traceback.format_exception(exc))


def test_ledger_unique_violation_is_a_conflict_without_the_value(runtime: Runtime) -> None:
    run = {
        "run_id": CANARY,
        "tenant_id": "acme",
        "agent_name": "agent",
        "agent_version": "1",
        "started_at": "2025-03-01T12:00:00Z",
    }
    runtime.ledger.begin_run(**run)
    with pytest.raises(Conflict) as info:
        runtime.ledger.begin_run(**run)
    assert_carries_no_value(info.value)


def test_governance_unique_violation_is_refused_without_the_value(runtime: Runtime) -> None:
    add_analyst(runtime, CANARY, tenant="acme", roles=["auditor"], now=T0)
    with pytest.raises(BadInput) as info:
        add_analyst(runtime, CANARY, tenant="acme", roles=["auditor"], now=T0)
    assert_carries_no_value(info.value)


def test_governance_transaction_translates_a_clash_without_the_value(runtime: Runtime) -> None:
    analysts = table_of(AnalystRow)
    row = {
        "name": CANARY,
        "tenant": "acme",
        "roles_json": "[]",
        "token_hash": CANARY,
        "created_at": "2025-03-01T12:00:00Z",
        "disabled": False,
    }
    with pytest.raises(Conflict) as info, write(runtime.ledger.engine) as conn:
        conn.execute(sa.insert(analysts), [row, row])
    assert_carries_no_value(info.value)
    with read(runtime.ledger.engine) as conn:  # the failed write left nothing behind
        assert conn.execute(sa.select(sa.func.count()).select_from(analysts)).scalar_one() == 0


def test_jobs_foreign_key_violation_is_a_conflict_without_the_value(runtime: Runtime) -> None:
    engine = runtime.ledger.engine
    with write(engine) as conn:  # an audit row for a job to lease; no specimen needed
        conn.execute(
            sa.insert(audits),
            {
                "id": "au-1",
                "tenant_id": "acme",
                "specimen_id": "sp-1",
                "requester": "analyst-1",
                "purpose": "test",
                "request_json": "{}",
                "status": "QUEUED",
                "progress_done": 0,
                "progress_total": 1,
                "created_at": "2025-03-01T12:00:00Z",
                "updated_at": "2025-03-01T12:00:00Z",
            },
        )
        enqueue(
            conn,
            audit_id="au-1",
            kind="audit",
            payload={},
            idempotency_key="au-1:audit",
            now=T0,
            max_attempts=3,
        )
    job = claim(engine, worker_id="w-1", now=T0, lease_seconds=60)
    assert job is not None
    with pytest.raises(Conflict) as info, fenced(engine, job.job_id, job.fencing_token) as conn:
        enqueue(  # a job for an audit that does not exist: the foreign key refuses it
            conn,
            audit_id=CANARY,
            kind="replay",
            payload={},
            idempotency_key=f"{CANARY}:replay",
            now=T0,
            max_attempts=3,
        )
    assert_carries_no_value(info.value)


def test_an_unreachable_database_is_unavailable_without_a_driver_error(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    for transaction in (read, write):
        with pytest.raises(LedgerUnavailable) as info, transaction(engine) as conn:
            conn.execute(sa.select(1))
        assert isinstance(info.value, LedgerError)
        assert_carries_no_value(info.value)


@pytest.mark.postgres
def test_a_plain_read_on_postgresql_is_one_statement_each_and_leaves_writes_atomic(
    postgres_url: str,
) -> None:
    """READ COMMITTED gives every statement its own snapshot, transaction or not: a plain
    read runs in autocommit and spends no round trips on BEGIN and COMMIT. A snapshot
    read still holds one transaction, and the pooled connection goes back to
    transactional writes."""
    from psycopg.pq import TransactionStatus

    from ledger import make_engine

    engine = make_engine(postgres_url)
    try:

        def status(conn: sa.Connection) -> TransactionStatus:
            conn.execute(sa.text("SELECT 1"))
            driver: Any = conn.connection.driver_connection
            return TransactionStatus(driver.info.transaction_status)

        with read(engine) as conn:
            assert status(conn) is TransactionStatus.IDLE
        with read(engine, snapshot=True) as conn:
            assert status(conn) is TransactionStatus.INTRANS
        with write(engine) as conn:
            assert status(conn) is TransactionStatus.INTRANS
    finally:
        engine.dispose()


def test_a_tag_raced_by_another_tagger_is_a_conflict_without_the_value(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two taggers both find a tag missing and both insert it: the second insert clashes
    on the primary key, whose DETAIL names the tag. It leaves as a Conflict that names
    nothing, and records nothing."""
    from enclave.cli import capture_incidents
    from enclave.release import tag_specimen, tags_of

    specimen_id = next(iter(capture_incidents(runtime).values()))
    assert tag_specimen(runtime, specimen_id, [CANARY], now=T0) == (CANARY,)
    entries = len(runtime.ledger.entries(kind="library.tagged"))
    # what the other tagger saw
    monkeypatch.setattr("enclave.release._library.tags_of", lambda *_: {})
    with pytest.raises(Conflict) as info:
        tag_specimen(runtime, specimen_id, [CANARY], now=T0)
    assert_carries_no_value(info.value)
    monkeypatch.undo()
    assert tags_of(runtime, [specimen_id]) == {specimen_id: (CANARY,)}
    assert len(runtime.ledger.entries(kind="library.tagged")) == entries
