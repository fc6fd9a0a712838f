"""Ledger behaviour on real databases: a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlmodel import SQLModel

import ledger
from ledger import (
    AdapterInfo,
    Classification,
    Conflict,
    EffectInfo,
    FieldRecord,
    Ledger,
    LedgerError,
    LedgerUnavailable,
    NotFound,
    Retention,
    RunStatus,
    SpecimenFilter,
    SpecimenRecord,
    SpecimenSummary,
    StepKind,
    StepRecord,
    canonical_digest,
    schema_heads,
)
from ledger.tables import LEDGER_TABLES

CANARY = "CANARY-7f3e9a-payload-value"


class CountingClock:
    """Deterministic, thread-safe ISO-8601 UTC clock: one microsecond per call."""

    def __init__(self) -> None:
        self._ticks = itertools.count()
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            tick = next(self._ticks)
        return f"2025-03-01T12:00:00.{tick:06d}Z"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def ledger_db(ledger_url: str, tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger.open(ledger_url, head_path=tmp_path / "head.json", clock=CountingClock())
    led.migrate()
    yield led
    led.close()


def make_specimen(
    specimen_id: str = "spec-1",
    *,
    tenant_id: str = "tenant-a",
    agent_name: str = "procurement",
    extra_field: FieldRecord | None = None,
    legal_hold: bool = False,
) -> SpecimenRecord:
    steps = (
        StepRecord(
            seq=1,
            agent="decider",
            call_id="c1",
            kind=StepKind.CONTEXT,
            name="template",
            alias="po-template",
            resolved="po-template@c1",
            schema_id=None,
            schema_version=None,
            request_digest="hmac-sha256:" + "1" * 64,
            response_digest="hmac-sha256:" + "2" * 64,
            valid_time="2025-03-01T10:00:00Z",
            observed_time="2025-03-01T10:00:00.1Z",
        ),
        StepRecord(
            seq=2,
            agent="decider",
            call_id="c2",
            kind=StepKind.MODEL,
            name="score",
            alias="scorer-latest",
            resolved="scorer@r1",
            schema_id="score",
            schema_version="1",
            request_digest="hmac-sha256:" + "3" * 64,
            response_digest="hmac-sha256:" + "4" * 64,
            valid_time="2025-03-01T10:00:01Z",
            observed_time="2025-03-01T10:00:01.2Z",
        ),
        StepRecord(
            seq=3,
            agent="executor",
            call_id="c3",
            kind=StepKind.EFFECT,
            name="reserve_lock",
            alias=None,
            resolved="gateway@2",
            schema_id="lock",
            schema_version="2",
            request_digest="hmac-sha256:" + "5" * 64,
            response_digest="hmac-sha256:" + "6" * 64,
            valid_time="2025-03-01T10:00:02Z",
            observed_time="2025-03-01T10:00:02.3Z",
            effect=EffectInfo(
                idempotency_token="tok-L-4471",
                token_expires_at="2025-03-01T10:00:32Z",
                reverifiable=False,
                live_state_fields=("lock_id", "expires"),
            ),
        ),
    )
    fields = [
        FieldRecord(
            seq=1,
            side="request",
            path="/template",
            classification=Classification.INTERNAL,
            retention=Retention.ENCRYPTED,
            keyed_digest="hmac-sha256:" + "a" * 64,
            payload_ref="spec-1/1/request",
        ),
        FieldRecord(
            seq=2,
            side="response",
            path="/score",
            classification=Classification.CONFIDENTIAL,
            retention=Retention.DIGEST_ONLY,
            keyed_digest="hmac-sha256:" + "b" * 64,
            payload_ref=None,
        ),
        FieldRecord(
            seq=3,
            side="response",
            path="/lock_id",
            classification=Classification.RESTRICTED,
            retention=Retention.WITHHELD,
            keyed_digest=None,
            payload_ref=None,
            live_state=True,
        ),
    ]
    if extra_field is not None:
        fields.append(extra_field)
    manifest: dict[str, Any] = {
        "run": specimen_id,
        "steps": [
            {"seq": s.seq, "resolved": s.resolved, "response": s.response_digest} for s in steps
        ],
        "runtime": {"python": "3.11", "threshold": 0.55},
        "outcome": {"decision": "APPROVE", "score": 0.5871},
    }
    return SpecimenRecord(
        specimen_id=specimen_id,
        tenant_id=tenant_id,
        agent_name=agent_name,
        agent_version="1.4.2",
        manifest=manifest,
        manifest_digest=canonical_digest(manifest),
        adapter=AdapterInfo(
            name="procurement-adapter",
            version="0.3.0",
            strategies=("NULLIFY", "REPLACE", "PERTURB"),
            source_ref="enclave.incidents.procurement@sha256:" + "c" * 64,
        ),
        highest_classification=Classification.RESTRICTED,
        retention_class="standard-90d",
        sealed_at="2025-03-01T10:00:05Z",
        steps=steps,
        fields=tuple(fields),
        legal_hold=legal_hold,
    )


def row_counts(led: Ledger) -> dict[str, int]:
    with led.engine.connect() as conn:
        return {
            table: int(conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())  # noqa: S608 - fixed table names
            for table in ("runs", "specimens", "steps", "fields", "ledger_entries")
        }


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


def assert_no_canary(exc: BaseException) -> None:
    for item in error_chain(exc):
        assert CANARY not in str(item)
        assert CANARY not in repr(item)
        assert CANARY not in repr(getattr(item, "args", ()))
    assert CANARY not in "".join(traceback.format_exception(exc))


# -- public surface -------------------------------------------------------------------


def test_specimen_summary_round_trips() -> None:
    summary = SpecimenSummary(
        specimen_id="s",
        tenant_id="t",
        agent_name="a",
        agent_version="1",
        manifest_digest="sha256:" + "0" * 64,
        highest_classification=Classification.INTERNAL,
        sealed_at="2025-01-01T00:00:00Z",
        step_count=3,
        erased=False,
        legal_hold=True,
    )
    assert SpecimenSummary.from_dict(summary.to_dict()) == summary
    with pytest.raises(ValueError):
        SpecimenSummary.from_dict({**summary.to_dict(), "step_count": -1})
    with pytest.raises(ValueError):
        SpecimenSummary.from_dict({**summary.to_dict(), "extra": 1})


# -- schema and engine ------------------------------------------------------------------


def test_migrated_schema_matches_models(ledger_db: Ledger) -> None:
    metadata = sa.MetaData()
    for name in LEDGER_TABLES:
        SQLModel.metadata.tables[name].to_metadata(metadata)

    def include_name(name: str | None, type_: str, _parent: Any) -> bool:
        return type_ != "table" or name in LEDGER_TABLES

    with ledger_db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": include_name, "compare_type": True}
        )
        assert compare_metadata(context, metadata) == []
        versions = set(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())
    # independent branches (jobs, governance) all sit on the ledger core revision
    script = ScriptDirectory(str(Path(ledger.__file__).parent / "migrations"))
    assert versions == set(script.get_heads()) == set(schema_heads())
    assert "0001" in {rev.revision for rev in script.walk_revisions()}
    ledger_db.migrate()  # idempotent: already at head
    assert ledger_db.head() is None


def test_sqlite_pragmas_in_force(tmp_path: Path) -> None:
    led = Ledger.open(f"sqlite:///{tmp_path / 'p.db'}")
    led.migrate()
    with led.engine.connect() as conn:
        pragma = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar_one()
            for name in (
                "journal_mode",
                "synchronous",
                "secure_delete",
                "foreign_keys",
                "busy_timeout",
            )
        }
    led.close()
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": 2,
        "secure_delete": 1,
        "foreign_keys": 1,
        "busy_timeout": 30_000,
    }
    assert led.engine.hide_parameters is True


def test_unreachable_database_is_ledger_unavailable(tmp_path: Path) -> None:
    led = Ledger.open(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    with pytest.raises(LedgerUnavailable) as info:
        led.head()
    assert not isinstance(info.value.__cause__, sa.exc.SQLAlchemyError)
    assert info.value.__context__ is None


# -- specimens ----------------------------------------------------------------------------


def test_seal_then_get_round_trips(ledger_db: Ledger) -> None:
    record = make_specimen()
    position = ledger_db.seal_specimen(record)
    assert position.index == 0
    assert ledger_db.get_specimen("spec-1") == record
    assert ledger_db.run_status("spec-1") is RunStatus.SEALED
    (entry,) = ledger_db.entries(kind="specimen.sealed")
    assert entry.subject == "spec-1"
    assert entry.entry_hash == position.entry_hash
    assert entry.body == {
        "specimen_id": "spec-1",
        "tenant_id": "tenant-a",
        "manifest_digest": record.manifest_digest,
        "adapter": {
            "name": "procurement-adapter",
            "version": "0.3.0",
            "strategies": ["NULLIFY", "REPLACE", "PERTURB"],
            "source_ref": record.adapter.source_ref,
        },
    }
    assert ledger_db.verify().ok


def test_seal_after_begin_run_and_run_lifecycle(ledger_db: Ledger) -> None:
    ledger_db.begin_run(
        run_id="spec-1",
        tenant_id="tenant-a",
        agent_name="procurement",
        agent_version="1.4.2",
        started_at="2025-03-01T10:00:00Z",
    )
    assert ledger_db.run_status("spec-1") is RunStatus.RUNNING
    ledger_db.seal_specimen(make_specimen())
    assert ledger_db.run_status("spec-1") is RunStatus.SEALED

    ledger_db.begin_run(
        run_id="run-2",
        tenant_id="tenant-a",
        agent_name="procurement",
        agent_version="1.4.2",
        started_at="2025-03-01T11:00:00Z",
    )
    ledger_db.mark_incomplete(
        "run-2", failure_code="agent_crashed", ended_at="2025-03-01T11:00:09Z"
    )
    assert ledger_db.run_status("run-2") is RunStatus.INCOMPLETE
    with pytest.raises(Conflict):
        ledger_db.mark_incomplete("run-2", failure_code="again", ended_at="2025-03-01T11:01Z")
    with pytest.raises(Conflict):  # an incomplete run is never sealed
        ledger_db.seal_specimen(make_specimen("run-2"))
    with pytest.raises(NotFound):
        ledger_db.run_status("nope")
    with pytest.raises(Conflict):  # run ids are unique
        ledger_db.begin_run(
            run_id="run-2",
            tenant_id="tenant-a",
            agent_name="x",
            agent_version="1",
            started_at="2025-03-01T12:00:00Z",
        )
    assert row_counts(ledger_db)["specimens"] == 1


def test_digest_mismatch_writes_nothing(ledger_db: Ledger) -> None:
    record = make_specimen()
    forged = dataclasses.replace(record, manifest_digest="sha256:" + "f" * 64)
    with pytest.raises(ValueError):
        ledger_db.seal_specimen(forged)
    assert row_counts(ledger_db) == dict.fromkeys(
        ("runs", "specimens", "steps", "fields", "ledger_entries"), 0
    )
    assert ledger_db.head() is None


@pytest.mark.parametrize(
    ("side", "retention", "digest", "ref"),
    [
        ("request", Retention.WITHHELD, "hmac-sha256:" + "d" * 64, None),
        ("request", Retention.WITHHELD, None, "t/s/payloads.ct"),
        ("request", Retention.DIGEST_ONLY, "hmac-sha256:" + "d" * 64, "t/s/payloads.ct"),
        ("response", Retention.ENCRYPTED, "hmac-sha256:" + "d" * 64, None),
        ("response", Retention.ENCRYPTED, None, "t/s/payloads.ct"),
        ("sideways", Retention.DIGEST_ONLY, "hmac-sha256:" + "d" * 64, None),
    ],
)
def test_inconsistent_field_record_writes_nothing(
    ledger_db: Ledger, side: str, retention: Retention, digest: str | None, ref: str | None
) -> None:
    odd = FieldRecord(1, side, "/extra", Classification.INTERNAL, retention, digest, ref)
    with pytest.raises(ValueError):
        ledger_db.seal_specimen(make_specimen(extra_field=odd))
    assert row_counts(ledger_db) == dict.fromkeys(
        ("runs", "specimens", "steps", "fields", "ledger_entries"), 0
    )
    assert ledger_db.head() is None


def test_failure_mid_seal_leaves_nothing_and_no_bound_values(
    ledger_db: Ledger, ledger_url: str
) -> None:
    ledger_db.seal_specimen(make_specimen("spec-0"))
    before, head_before = row_counts(ledger_db), ledger_db.head()
    # A second field with the same (seq, side, path) fails in the database, after the
    # run update, the ledger entry, the specimen row and the steps were written.
    duplicate = FieldRecord(
        seq=1,
        side="request",
        path="/template",
        classification=Classification.INTERNAL,
        retention=Retention.DIGEST_ONLY,
        keyed_digest="hmac-sha256:" + "d" * 64,
        payload_ref=None,
    )
    bad = make_specimen(CANARY, extra_field=duplicate)
    with pytest.raises(Conflict) as info:
        ledger_db.seal_specimen(bad)
    assert_no_canary(info.value)
    assert row_counts(ledger_db) == before
    assert ledger_db.head() == head_before
    assert ledger_db.entries(subject=CANARY) == []
    with pytest.raises(NotFound):
        ledger_db.run_status(CANARY)
    assert ledger_db.verify().ok


def test_integrity_error_text_carries_no_bound_values(ledger_db: Ledger, ledger_url: str) -> None:
    ledger_db.begin_run(
        run_id=CANARY,
        tenant_id="tenant-a",
        agent_name="a",
        agent_version="1",
        started_at="2025-03-01T10:00:00Z",
    )
    with pytest.raises(Conflict) as info:
        ledger_db.begin_run(
            run_id=CANARY,
            tenant_id="tenant-a",
            agent_name="a",
            agent_version="1",
            started_at="2025-03-01T10:00:00Z",
        )
    assert_no_canary(info.value)
    assert isinstance(info.value, LedgerError)
    if ledger_url.startswith("postgresql"):
        # Control: the driver's own message does echo the value, so scrubbing matters.
        dsn = ledger_url.replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(dsn) as raw, pytest.raises(psycopg.IntegrityError) as driver:
            raw.execute(
                "INSERT INTO runs (id, tenant_id, agent_name, agent_version, status, "
                "started_at) VALUES (%s, 'tenant-a', 'a', '1', 'running', 'x')",
                (CANARY,),
            )
        assert CANARY in str(driver.value)


def test_list_specimens_filters_and_pages(ledger_db: Ledger) -> None:
    for i in range(5):
        ledger_db.seal_specimen(
            make_specimen(
                f"spec-{i}",
                tenant_id="tenant-a" if i % 2 == 0 else "tenant-b",
                agent_name="claims" if i == 4 else "procurement",
                legal_hold=i == 1,
            )
        )
    everything = ledger_db.list_specimens()
    assert [s.specimen_id for s in everything] == [f"spec-{i}" for i in (4, 3, 2, 1, 0)]
    assert {s.step_count for s in everything} == {3}
    assert [s.specimen_id for s in ledger_db.list_specimens(tenant_id="tenant-b")] == [
        "spec-3",
        "spec-1",
    ]
    assert [s.specimen_id for s in ledger_db.list_specimens(agent_name="claims")] == ["spec-4"]
    first = ledger_db.specimen_page(SpecimenFilter(), limit=2)
    assert [s.specimen_id for s in first.items] == ["spec-4", "spec-3"]
    assert first.next_before is not None
    second = ledger_db.specimen_page(SpecimenFilter(), limit=2, before=first.next_before)
    assert [s.specimen_id for s in second.items] == ["spec-2", "spec-1"]
    held = ledger_db.list_specimens(tenant_id="tenant-b")[1]
    assert held.legal_hold and not held.erased
    assert held.highest_classification is Classification.RESTRICTED
    with pytest.raises(NotFound):
        ledger_db.get_specimen("spec-99")


def test_mark_erased_flags_and_appends(ledger_db: Ledger) -> None:
    ledger_db.seal_specimen(make_specimen("spec-1"))
    ledger_db.seal_specimen(make_specimen("spec-2", legal_hold=True))
    position = ledger_db.mark_erased("spec-1", erased_at="2025-06-01T00:00:00Z")
    assert position.index == 2
    entry = ledger_db.entry(2)
    assert (entry.kind, entry.subject) == ("specimen.erased", "spec-1")
    assert entry.body == {
        "specimen_id": "spec-1",
        "tenant_id": "tenant-a",
        "erased_at": "2025-06-01T00:00:00Z",
    }
    summary = {s.specimen_id: s for s in ledger_db.list_specimens()}
    assert summary["spec-1"].erased and not summary["spec-2"].erased
    with pytest.raises(Conflict):
        ledger_db.mark_erased("spec-1", erased_at="2025-06-02T00:00:00Z")
    with pytest.raises(Conflict):
        ledger_db.mark_erased("spec-2", erased_at="2025-06-02T00:00:00Z")
    with pytest.raises(NotFound):
        ledger_db.mark_erased("spec-3", erased_at="2025-06-02T00:00:00Z")
    assert ledger_db.head() == position
    assert ledger_db.verify().ok


def test_specimen_kinds_are_reserved(ledger_db: Ledger) -> None:
    with pytest.raises(ValueError):
        ledger_db.append("specimen.sealed", "spec-x", {"specimen_id": "spec-x"})
    assert ledger_db.head() is None


def test_sqlite_driver_errors_are_wrapped(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    led = Ledger.open(f"sqlite:///{path}")
    led.migrate()
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TABLE ledger_tip")
    with pytest.raises(LedgerUnavailable) as info:
        led.append("note", "s", {})
    assert info.value.__context__ is None
    assert "ledger_tip" not in str(info.value)
    led.close()
