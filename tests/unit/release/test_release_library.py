"""The specimen library: tags (ledger-recorded), selectors and the selection digest."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from enclave import BadInput, Home, Refused, Runtime, erase_specimen
from enclave.capture import capture
from enclave.incidents import ALL, claims, procurement
from enclave.release import Selector, select, tag_specimen, tags_of, untag_specimen
from tests.support.canary import INCIDENT_CANARIES, scan_tree


@pytest.fixture
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("library") / "home"))
    yield rt
    rt.close()


def _capture_all(runtime: Runtime) -> dict[str, str]:
    out = {}
    for incident in ALL:
        base = incident.BASELINE_INPUT
        out[incident.AGENT.name] = capture(
            runtime, incident.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        ).specimen_id
    return out


def test_tags_select_and_are_recorded_in_the_ledger(runtime: Runtime) -> None:
    ids = _capture_all(runtime)
    now = datetime.now(UTC)
    assert tag_specimen(runtime, ids["procurement"], ["release-gate/po", "must-hold"], now=now) == (
        "must-hold",
        "release-gate/po",
    )
    assert tag_specimen(runtime, ids["procurement"], ["must-hold"], now=now) == ()
    tag_specimen(runtime, ids["claims"], ["release-gate/po"], now=now)
    picked = select(runtime, Selector(tags=("release-gate/po",)))
    assert picked.specimens == tuple(sorted([ids["procurement"], ids["claims"]]))
    assert select(runtime, Selector(tags=("release-gate/po", "must-hold"))).specimens == (
        ids["procurement"],
    )
    assert select(runtime, Selector(agent="claims")).specimens == (ids["claims"],)
    assert select(runtime, Selector(tenant=procurement.BASELINE_INPUT["tenant"])).specimens
    assert (
        select(runtime, Selector(agent="procurement", sealed_before="2000-01-01")).specimens == ()
    )
    entries = runtime.ledger.entries(kind="library.tagged", subject=ids["procurement"])
    assert [e.body["tags"] for e in entries] == [["must-hold", "release-gate/po"]]
    assert untag_specimen(runtime, ids["claims"], ["release-gate/po"]) == ("release-gate/po",)
    after = select(runtime, Selector(tags=("release-gate/po",)))
    assert after.specimens == (ids["procurement"],)
    assert after.digest != picked.digest  # a dropped member shows in the digest
    assert runtime.ledger.entries(kind="library.untagged", subject=ids["claims"])
    assert tags_of(runtime, [ids["procurement"]]) == {
        ids["procurement"]: ("must-hold", "release-gate/po")
    }
    assert scan_tree(runtime.home.root, INCIDENT_CANARIES) == {}


def test_erasure_wins_and_is_named_as_a_library_change(runtime: Runtime) -> None:
    ids = _capture_all(runtime)
    now = datetime.now(UTC)
    for specimen in ids.values():
        tag_specimen(runtime, specimen, ["lib"], now=now)
    before = select(runtime, Selector(tags=("lib",)))
    erase_specimen(runtime, ids["claims"], now=now)
    after = select(runtime, Selector(tags=("lib",)))
    assert ids["claims"] not in after.specimens and after.erased == (ids["claims"],)
    assert after.digest != before.digest
    with pytest.raises(Refused):
        tag_specimen(runtime, ids["claims"], ["other"], now=now)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"tags": ("Bad Tag",)},
        {"tenant": "a b"},
        {"sealed_after": "yesterday"},
        {"classification": "secret"},
    ],
)
def test_bad_selectors_are_one_line_refusals(kwargs: dict[str, object]) -> None:
    with pytest.raises(BadInput) as caught:
        Selector(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value) and "Bad Tag" not in str(caught.value)


def test_tag_of_an_unknown_specimen_is_refused(runtime: Runtime) -> None:
    with pytest.raises(BadInput):
        tag_specimen(runtime, "sp-missing", ["lib"], now=datetime.now(UTC))
    _ = claims


def test_migrated_library_table_matches_its_definition(runtime: Runtime) -> None:
    import sqlalchemy as sa
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from ledger.tables import DOCUMENT_TABLES, LIBRARY_TABLES, METADATA

    for names in (LIBRARY_TABLES, DOCUMENT_TABLES):
        metadata = sa.MetaData()
        for name in names:
            METADATA.tables[name].to_metadata(metadata)

        def include_name(name: str | None, type_: str, _parent: object) -> bool:
            return type_ != "table" or name in names  # noqa: B023 - used at once

        with runtime.ledger.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": include_name, "compare_type": True}
            )
            assert compare_metadata(context, metadata) == []


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_tags_of_a_library_larger_than_one_statement_can_bind(
    backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    """A selection names every member: 70,000 ids are more parameters than one statement
    may bind (PostgreSQL 65,535; SQLite 32,766 unless built with more)."""
    env: dict[str, str] = {}
    if backend == "postgres":
        env["REPLAY_ENCLAVE_LEDGER_URL"] = request.getfixturevalue("postgres_url")
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("big") / "home"), env=env)
    try:
        ids = _capture_all(rt)
        tag_specimen(rt, ids["claims"], ["release-gate/big"], now=datetime.now(UTC))
        many = [f"absent-{n}" for n in range(70_000)]
        assert tags_of(rt, [*many, ids["claims"]]) == {ids["claims"]: ("release-gate/big",)}
    finally:
        rt.close()


def test_a_selector_lists_a_bounded_number_of_ids() -> None:
    Selector(specimens=tuple(f"sp-{n}" for n in range(10_000)))
    with pytest.raises(BadInput, match="at most 10000 specimen ids"):
        Selector(specimens=tuple(f"sp-{n}" for n in range(10_001)))
