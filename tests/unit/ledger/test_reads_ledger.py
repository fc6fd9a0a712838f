"""Ledger reads that do not grow with the data, on SQLite and a real PostgreSQL:

* the auditability filter runs in SQL on facts written at seal, and agrees with the
  service's own reading (``expected_auditability``) for any mix of effects and times;
* keyset pages cover every specimen exactly once while others are sealed in between;
* a page is one bounded statement (LIMIT), the same however many specimens exist;
* revision 0004 upgrades a database that already holds specimens, filling their facts;
* verification resumes from a checkpoint, which is itself checked, and ``full`` still
  finds what lies before it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enclave.service import ADMISSIBLE, expected_auditability
from ledger import Classification, Conflict, EffectInfo, Ledger, SpecimenFilter, compute_entry_hash
from tests.support.reads_world import CLASSES, seal_many, synthetic_specimen


class Clock:
    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __call__(self) -> str:
        return f"2025-03-01T12:00:00.{next(self._ticks):06d}Z"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    found: str = request.getfixturevalue("postgres_url")
    return found


@pytest.fixture
def led(url: str, tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(url, head_path=tmp_path / "head.json", clock=Clock())
    opened.migrate()
    yield opened
    opened.close()


NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def _ids(led: Ledger, where: SpecimenFilter) -> list[str]:
    return [s.specimen_id for s in led.specimen_page(where, limit=1000).items]


# -- the auditability filter ---------------------------------------------------------------

_ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
_EXPIRY = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(2024, 1, 1), max_value=datetime(2027, 1, 1), timezones=_ZONES
    ).map(lambda d: d.isoformat()),
    st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2027, 1, 1)).map(
        lambda d: d.isoformat() + "Z"
    ),
    st.sampled_from(
        [
            "2025-06-01T12:00:00Z",  # exactly now: expired
            "2025-06-01T12:00:00.000001Z",
            "2025-06-01T17:30:00+05:30",  # now, in another zone
            "2025-06-01T12:00:00",  # no zone: read as expired
            "not a time",
            "9999-12-31T23:00:00-05:00",  # past year 9999 once in UTC
            "0001-01-01T00:30:00+01:00",  # before year 1 once in UTC
        ]
    ),
)
_EFFECT = st.builds(
    EffectInfo,
    idempotency_token=st.just("tok"),
    token_expires_at=_EXPIRY,
    reverifiable=st.booleans(),
    live_state_fields=st.sampled_from([(), ("lock_id",)]),
)
_COUNTER = itertools.count()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    specimens=st.lists(st.lists(_EFFECT, max_size=3), min_size=1, max_size=5),
    now=st.one_of(
        st.just(NOW),
        st.datetimes(
            min_value=datetime(2024, 6, 1), max_value=datetime(2026, 6, 1), timezones=_ZONES
        ),
    ),
)
def test_sql_auditability_agrees_with_the_services_reading(
    tmp_path: Path, specimens: list[list[EffectInfo]], now: datetime
) -> None:
    led = _hypothesis_ledger(tmp_path)
    tenant = f"t{next(_COUNTER)}"
    for n, effects in enumerate(specimens):
        led.seal_specimen(synthetic_specimen(f"{tenant}-{n}", tenant_id=tenant, effects=effects))
    expected = {
        f"{tenant}-{n}"
        for n in range(len(specimens))
        if expected_auditability(led.get_specimen(f"{tenant}-{n}"), now=now) == ADMISSIBLE
    }
    admissible = SpecimenFilter(tenant_id=tenant, admissible=True, now=now)
    observable = SpecimenFilter(tenant_id=tenant, admissible=False, now=now)
    assert set(_ids(led, admissible)) == expected
    assert set(_ids(led, observable)) == {f"{tenant}-{n}" for n in range(len(specimens))} - expected
    assert led.count_specimens(admissible) == len(expected)


_LEDGERS: dict[Path, Ledger] = {}


def _hypothesis_ledger(tmp_path: Path) -> Ledger:
    """One ledger per test run (hypothesis calls the body many times per fixture)."""
    if tmp_path not in _LEDGERS:
        for stale in _LEDGERS.values():
            stale.close()
        _LEDGERS.clear()
        opened = Ledger.open(f"sqlite:///{tmp_path / 'h.db'}", clock=Clock())
        opened.migrate()
        _LEDGERS[tmp_path] = opened
    return _LEDGERS[tmp_path]


def test_a_mix_filters_the_same_on_each_backend(led: Ledger) -> None:
    mix = {
        "none": (),
        "good": (EffectInfo("t", None, True),),
        "future": (EffectInfo("t", "2025-06-02T00:00:00Z", True),),
        "expired": (EffectInfo("t", "2025-06-01T12:00:00Z", True),),
        "live": (EffectInfo("t", None, True, ("lock_id",)),),
        "unverifiable": (EffectInfo("t", None, False),),
        "zoneless": (EffectInfo("t", "2025-07-01T00:00:00", True),),
    }
    for name, effects in mix.items():
        led.seal_specimen(synthetic_specimen(name, effects=effects))
    admissible = {
        n for n in mix if expected_auditability(led.get_specimen(n), now=NOW) == ADMISSIBLE
    }
    assert admissible == {"none", "good", "future"}
    assert set(_ids(led, SpecimenFilter(admissible=True, now=NOW))) == admissible
    assert set(_ids(led, SpecimenFilter(admissible=False, now=NOW))) == set(mix) - admissible
    later = NOW + timedelta(days=2)  # the future token has expired by then
    assert set(_ids(led, SpecimenFilter(admissible=True, now=later))) == {"none", "good"}


# -- keyset pages ------------------------------------------------------------------------


def test_keyset_pages_cover_every_specimen_once_while_others_are_sealed(led: Ledger) -> None:
    before = set(seal_many(led, 23))
    seen: list[str] = []
    cursor: int | None = None
    extra = itertools.count()
    while True:
        page = led.specimen_page(SpecimenFilter(tenant_id="acme"), limit=5, before=cursor)
        seen += [s.specimen_id for s in page.items]
        # a newer specimen lands between every two pages
        seal_many(led, 1, prefix="sp-new", start=next(extra))
        if page.next_before is None:
            break
        cursor = page.next_before
    assert len(seen) == len(set(seen)) == len(before)
    assert set(seen) == before


def test_a_page_is_one_bounded_statement_whatever_the_size(led: Ledger) -> None:
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> None:
        statements.append((sql, params))

    where = SpecimenFilter(tenant_id="acme", agent_name="claims", admissible=True, now=NOW)
    shapes = []
    for total in (12, 120):
        seal_many(led, total - (12 if total == 120 else 0), start=12 if total == 120 else 0)
        sa.event.listen(led.engine, "before_cursor_execute", record)
        try:
            statements.clear()
            page = led.specimen_page(where, limit=4)
            assert len(page.items) == 4
            shapes.append([sql for sql, _ in statements])
            selects = [(sql, p) for sql, p in statements if "FROM specimens" in sql]
            assert len(selects) == 1
            sql, params = selects[0]
            assert "LIMIT" in sql.upper() and "OFFSET" not in sql.upper()
            limit = params["limit"] if isinstance(params, dict) else params[-1]
            assert limit == 5  # the page and one row that says "there is more"
        finally:
            sa.event.remove(led.engine, "before_cursor_execute", record)
    assert shapes[0] == shapes[1]  # ten times the specimens: the very same statements


# -- the migration -------------------------------------------------------------------------


def _alembic(led: Ledger) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parents[3] / "ledger/migrations"))
    return config


def test_0004_upgrades_a_database_that_holds_specimens(led: Ledger) -> None:
    led.seal_specimen(synthetic_specimen("plain", classification=Classification.PUBLIC))
    led.seal_specimen(
        synthetic_specimen(
            "lock",
            classification=Classification.RESTRICTED,
            effects=(EffectInfo("t", "2025-06-01T12:00:30Z", True),),
        )
    )
    led.seal_specimen(
        synthetic_specimen("live", effects=(EffectInfo("t", None, True, ("lock_id",)),))
    )
    config = _alembic(led)
    with led.engine.connect() as conn:
        with conn.begin():
            config.attributes["connection"] = conn
            command.downgrade(config, "0003")  # below 0004: back to the 0002 + 0003 heads
        columns = {c["name"] for c in sa.inspect(conn).get_columns("specimens")}
    assert "effects_reverifiable" not in columns  # the database as 0002 + 0003 left it
    led.migrate()
    with led.engine.connect() as conn:
        rows = {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                sa.text(
                    "SELECT id, effects_reverifiable, effects_expire_at, classification_rank "
                    "FROM specimens"
                )
            )
        }
    assert {k: (bool(v[0]), v[1], v[2]) for k, v in rows.items()} == {
        "plain": (True, None, 0),
        "lock": (True, "2025-06-01T12:00:30.000000Z", 3),
        "live": (False, None, 1),
    }
    at = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert set(_ids(led, SpecimenFilter(admissible=True, now=at))) == {"plain", "lock"}
    assert _ids(led, SpecimenFilter(admissible=True, now=at + timedelta(minutes=1))) == ["plain"]


# -- incremental verification ------------------------------------------------------------


def _tamper(
    led: Ledger, index: int, *, column: str = "body_json", value: str | None = None
) -> None:
    with led.engine.begin() as conn:
        if value is None:
            value = '{"specimen_id":"forged"}'
        conn.execute(
            sa.text(f"UPDATE ledger_entries SET {column} = :v WHERE entry_index = :i"),  # noqa: S608 - test's own column names
            {"v": value, "i": index},
        )


def _append(led: Ledger, count: int, start: int = 0) -> None:
    led.append_many([("note", f"n{start + i}", {"n": start + i}) for i in range(count)])


def test_incremental_verification_resumes_at_the_checkpoint(led: Ledger) -> None:
    _append(led, 10)
    first = led.verify(record=True)
    assert first.ok and first.verified_from == 0
    _append(led, 5, start=10)
    resumed = led.verify(incremental=True, record=True)
    assert resumed.ok and resumed.verified_from == 10 and resumed.length == 15
    assert led.verify(incremental=True).verified_from == 15  # nothing new: nothing to read


def test_an_edit_after_the_checkpoint_fails_the_incremental_run(led: Ledger) -> None:
    _append(led, 6)
    assert led.verify(record=True).ok
    _append(led, 4, start=6)
    _tamper(led, 8)
    report = led.verify(incremental=True, record=True)
    assert not report.ok and report.first_bad_index == 8
    assert led.verify(incremental=True).verified_from == 6  # no checkpoint past the edit


def test_an_edit_before_the_checkpoint_is_found_by_a_full_run(led: Ledger) -> None:
    _append(led, 8)
    assert led.verify(record=True).ok
    _tamper(led, 2)
    # the honest limit of a resumed run: it does not reread what it already checked
    assert led.verify(incremental=True).ok
    full = led.verify()
    assert not full.ok and full.first_bad_index == 2 and full.verified_from == 0


@pytest.mark.parametrize("column", ["body_json", "entry_hash"])
def test_a_checkpoint_whose_entry_changed_is_not_trusted(led: Ledger, column: str) -> None:
    _append(led, 6)
    checkpoint = led.verify(record=True).head
    assert checkpoint is not None and checkpoint.index == 5
    value = None if column == "body_json" else "sha256:" + "f" * 64
    _tamper(led, 5, column=column, value=value)
    report = led.verify(incremental=True)
    assert not report.ok and report.first_bad_index == 5
    assert report.checked[0] == "checkpoint"


def test_a_forged_checkpoint_row_is_not_trusted(led: Ledger) -> None:
    _append(led, 6)
    with led.engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO ledger_checkpoints (entry_index, entry_hash, verified_at) "
                "VALUES (4, :h, 'x')"
            ),
            {"h": "sha256:" + "0" * 64},
        )
    report = led.verify(incremental=True)
    assert not report.ok and report.first_bad_index == 4


def test_a_rewritten_history_behind_a_checkpoint_meets_the_saved_head(led: Ledger) -> None:
    _append(led, 6)
    assert led.verify(record=True).ok
    # entry 3 edited, every later hash recomputed, tip and checkpoint moved along: the
    # chain and the checkpoint agree again; only the head saved outside still differs
    with led.engine.begin() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT entry_index, kind, subject, body_json, prev_hash, recorded_at "
                "FROM ledger_entries WHERE entry_index >= 3 ORDER BY entry_index"
            )
        ).all()
        prev = rows[0][4]
        for index, kind, subject, body, _, recorded_at in rows:
            body = '{"n":99}' if index == 3 else body
            new_hash = compute_entry_hash(
                index=index,
                kind=kind,
                subject=subject,
                body_json=body.encode(),
                prev_hash=prev,
                recorded_at=recorded_at,
            )
            conn.execute(
                sa.text(
                    "UPDATE ledger_entries SET body_json = :b, prev_hash = :p, entry_hash = :h "
                    "WHERE entry_index = :i"
                ),
                {"b": body, "p": prev, "h": new_hash, "i": index},
            )
            prev = new_hash
        conn.execute(sa.text("UPDATE ledger_tip SET head_hash = :h"), {"h": prev})
        conn.execute(sa.text("UPDATE ledger_checkpoints SET entry_hash = :h"), {"h": prev})
    report = led.verify(incremental=True)
    assert (
        not report.ok and report.reason == "entry differs from the saved head (history rewritten)"
    )
    assert not led.verify().ok


def test_sealed_specimens_after_the_checkpoint_are_checked(led: Ledger) -> None:
    led.seal_specimen(synthetic_specimen("a"))
    assert led.verify(record=True).ok
    led.seal_specimen(synthetic_specimen("b", classification=CLASSES[3]))
    with led.engine.begin() as conn:
        conn.execute(sa.text("UPDATE specimens SET manifest_digest = 'sha256:x' WHERE id = 'b'"))
    report = led.verify(incremental=True)
    assert not report.ok and report.reason == "specimen manifest does not match its digest"


def test_seal_many_seals_all_or_nothing(led: Ledger) -> None:
    led.seal_specimen(synthetic_specimen("a"))
    with pytest.raises(Conflict):
        led.seal_many([synthetic_specimen("b"), synthetic_specimen("a")])
    assert _ids(led, SpecimenFilter()) == ["a"]
    positions = led.seal_many([synthetic_specimen(n) for n in ("b", "c")])
    assert [p.index for p in positions] == [1, 2]
    assert _ids(led, SpecimenFilter()) == ["c", "b", "a"]
    assert led.verify().ok
