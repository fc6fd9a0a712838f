"""The audit's sealed inference answers kept by the payload store, run against the file
store and the database store on SQLite and on a real PostgreSQL: an answer kept is read
back and stays the first one kept, keys are 64 hex characters and nothing else, erasure
takes the answers with the specimen, ``payloads migrate`` carries them byte for byte
(and again after an interruption), and no plaintext of an answer reaches the store."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import (
    BadInput,
    DecryptionFailed,
    Home,
    InfrastructureError,
    Runtime,
    erase_specimen,
    utc_now,
)
from enclave.capture import capture
from enclave.keys import WrappedKey
from enclave.replay.inference import InferenceRecord
from enclave.store import DatabasePayloadStore, PayloadBackend, PayloadStore, migrate
from ledger import Ledger
from ledger.tables import InferenceAnswerRow, table_of
from tests.agents import http_agents as ha
from tests.support import cli_runner
from tests.support.canary import find_canaries, scan_tree

WRAPPED = WrappedKey(provider="local", kek_id="acme", kek_version=1, blob="AAAA")
DATA_KEY = bytes(range(32))
ONE, TWO, THREE = (hashlib.sha256(word).hexdigest() for word in (b"one", b"two", b"three"))
CANARY = "CANARY-SEALED-ANSWER-3c91d7"


@dataclass
class Database:
    """The database store and its engine (to look at its rows)."""

    store: DatabasePayloadStore
    engine: sa.Engine

    def rows(self, specimen: str) -> int:
        answers = table_of(InferenceAnswerRow)
        with self.engine.connect() as conn:
            query = sa.select(sa.func.count()).where(answers.c.specimen_id == specimen)
            return int(conn.execute(query).scalar_one())


def open_database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (
        f"sqlite:///{tmp_path / 'ledger.db'}"
        if kind == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    ledger = Ledger.open(url)
    try:
        ledger.migrate()
        yield Database(DatabasePayloadStore(engine=ledger.engine), ledger.engine)
    finally:
        ledger.close()


@pytest.fixture(params=["files", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each store: the contract is the same."""
    if request.param == "files":
        yield PayloadStore(root=tmp_path / "payloads")
    else:
        for db in open_database(request.param, request, tmp_path):
            yield db.store


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    yield from open_database(request.param, request, tmp_path)


def sealed_specimen(store: PayloadBackend, specimen: str, tenant: str = "acme") -> None:
    writer = store.open_writer(tenant, specimen, wrapped=WRAPPED, data_key=DATA_KEY, durable=False)
    writer.add_step(0, [("response", "/a", b'"alpha"')])
    writer.close()


# -- keeping and reading -----------------------------------------------------------------


def test_an_answer_kept_is_read_back(store: Any) -> None:
    sealed_specimen(store, "sp-1")
    store.keep_answer("acme", "sp-1", ONE, b"sealed one")
    store.keep_answer("acme", "sp-1", TWO, b"\x00sealed two\xff")
    assert store.answer("acme", "sp-1", ONE) == b"sealed one"
    assert store.answer("acme", "sp-1", TWO) == b"\x00sealed two\xff"
    assert store.answer("acme", "sp-1", THREE) is None  # an unknown key
    assert store.answer("acme", "sp-2", ONE) is None  # another specimen's
    assert store.answer("other", "sp-1", ONE) is None  # another tenant's
    assert sorted(store.answers("acme", "sp-1")) == sorted(
        [(ONE, b"sealed one"), (TWO, b"\x00sealed two\xff")]
    )
    assert list(store.answers("acme", "sp-2")) == []


def test_the_first_answer_kept_stays(store: Any) -> None:
    """Two batches at once may keep the same key: the record keeps the first, so an
    answer once served from it never changes under a later reader."""
    sealed_specimen(store, "sp-1")
    store.keep_answer("acme", "sp-1", ONE, b"first")
    store.keep_answer("acme", "sp-1", ONE, b"second")
    assert store.answer("acme", "sp-1", ONE) == b"first"
    assert list(store.answers("acme", "sp-1")) == [(ONE, b"first")]


BAD_KEYS = [
    "",
    "../" + "a" * 61,
    "a" * 63,
    "a" * 65,
    "A" * 64,  # upper case: one key, one spelling
    "g" * 64,
    "a" * 62 + "/b",
    "a" * 63 + "\n",
    "a" * 63 + "\x00",
    "ａ" * 64,  # full-width
]


@pytest.mark.parametrize("bad", BAD_KEYS)
def test_a_key_that_is_not_64_hex_is_refused(store: Any, bad: str, tmp_path: Path) -> None:
    sealed_specimen(store, "sp-1")
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(BadInput):
        store.keep_answer("acme", "sp-1", bad, b"sealed")
    with pytest.raises(BadInput):
        store.answer("acme", "sp-1", bad)
    assert list(store.answers("acme", "sp-1")) == []
    if isinstance(store, PayloadStore):
        assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written anywhere


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a\x00b", "é"])
def test_ids_are_validated(store: Any, bad: str) -> None:
    for tenant, specimen in ((bad, "sp-1"), ("acme", bad)):
        with pytest.raises(BadInput):
            store.keep_answer(tenant, specimen, ONE, b"sealed")
        with pytest.raises(BadInput):
            store.answer(tenant, specimen, ONE)
        with pytest.raises(BadInput):
            list(store.answers(tenant, specimen))


def test_a_file_store_keeps_each_answer_as_a_private_file(tmp_path: Path) -> None:
    store = PayloadStore(root=tmp_path / "payloads")
    sealed_specimen(store, "sp-1")
    store.keep_answer("acme", "sp-1", ONE, b"sealed one")
    folder = tmp_path / "payloads" / "acme" / "sp-1" / "answers"
    assert sorted(p.name for p in folder.iterdir()) == [f"{ONE}.ct"]  # no temporary left
    assert (folder / f"{ONE}.ct").read_bytes() == b"sealed one"
    assert folder.stat().st_mode & 0o777 == 0o700
    # a leftover of a write cut short is no answer
    (folder / f".{TWO}.123.tmp").write_bytes(b"half")
    assert list(store.answers("acme", "sp-1")) == [(ONE, b"sealed one")]
    assert store.answer("acme", "sp-1", TWO) is None


def test_a_failing_database_is_one_line_naming_no_value(database: Database) -> None:
    store = database.store
    sealed_specimen(store, "sp-1")
    with database.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE inference_answers")
    for call in (
        lambda: store.keep_answer("acme", "sp-1", ONE, CANARY.encode()),
        lambda: store.answer("acme", "sp-1", ONE),
        lambda: list(store.answers("acme", "sp-1")),
    ):
        with pytest.raises(InfrastructureError) as failed:
            call()
        message = str(failed.value)
        assert "\n" not in message and CANARY not in message and ONE not in message
        chain: list[BaseException] = []
        error: BaseException | None = failed.value
        while error is not None:
            chain.append(error)
            error = error.__cause__ or error.__context__
        # no driver error on the way, with its statement and bound values
        assert [type(e).__module__.split(".")[0] for e in chain if e is not failed.value] in (
            [],
            ["ledger"],
        )
        assert not any(CANARY in str(e) or ONE in str(e) for e in chain)


# -- erasure -----------------------------------------------------------------------------


def test_erase_removes_the_answers(store: Any) -> None:
    sealed_specimen(store, "sp-1")
    sealed_specimen(store, "sp-2")
    store.keep_answer("acme", "sp-1", ONE, b"sealed one")
    store.keep_answer("acme", "sp-1", TWO, b"sealed two")
    store.keep_answer("acme", "sp-2", ONE, b"kept")
    assert store.erase("acme", "sp-1") is True
    assert store.answer("acme", "sp-1", ONE) is None
    assert list(store.answers("acme", "sp-1")) == []
    assert list(store.answers("acme", "sp-2")) == [(ONE, b"kept")]


def test_no_answer_is_kept_for_a_specimen_the_store_does_not_hold(
    store: Any, tmp_path: Path
) -> None:
    """An audit still running when its specimen is erased cannot bring anything of it
    back: keeping an answer for an erased (or never sealed) specimen is refused as if
    the key were gone, and the store holds nothing of it afterwards."""
    sealed_specimen(store, "sp-1")
    store.keep_answer("acme", "sp-1", ONE, b"sealed one")
    assert store.erase("acme", "sp-1") is True
    for specimen in ("sp-1", "sp-never"):
        with pytest.raises(DecryptionFailed):
            store.keep_answer("acme", specimen, TWO, CANARY.encode())
        assert store.answer("acme", specimen, TWO) is None
        assert list(store.answers("acme", specimen)) == []
        assert store.erase("acme", specimen) is False  # nothing there to erase
    if isinstance(store, PayloadStore):
        assert not (tmp_path / "payloads" / "acme" / "sp-1").exists()
        assert scan_tree(tmp_path, [CANARY]) == {}
    else:
        assert store.specimens() == []


def test_answers_are_erased_in_the_key_s_transaction(database: Database) -> None:
    """When deleting the answer rows fails, the key row is back: the specimen's key,
    ciphertext and answers go together or not at all."""
    store, engine = database.store, database.engine
    sealed_specimen(store, "sp-1")
    store.keep_answer("acme", "sp-1", ONE, b"sealed one")
    sqlite = engine.dialect.name == "sqlite"
    with engine.begin() as conn:
        if sqlite:
            conn.exec_driver_sql(
                "CREATE TRIGGER keep_answers BEFORE DELETE ON inference_answers "
                "BEGIN SELECT RAISE(ABORT, 'kept'); END"
            )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'kept'; END $$"
            )
            conn.exec_driver_sql(
                "CREATE TRIGGER keep_answers BEFORE DELETE ON inference_answers "
                "FOR EACH ROW EXECUTE FUNCTION keep()"
            )
    with pytest.raises(InfrastructureError):
        store.erase("acme", "sp-1")
    assert store.wrapped_key("acme", "sp-1") == WRAPPED
    assert store.answer("acme", "sp-1", ONE) == b"sealed one"
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "DROP TRIGGER keep_answers" + ("" if sqlite else " ON inference_answers")
        )
    assert store.erase("acme", "sp-1") is True
    assert database.rows("sp-1") == 0


def test_answers_are_not_compressed_on_postgresql(postgres_url: str) -> None:
    """Sealed answers are ciphertext, stored as the chunks are (``EXTERNAL``)."""
    ledger = Ledger.open(postgres_url)
    try:
        ledger.migrate()
        with ledger.engine.connect() as conn:
            storage = conn.exec_driver_sql(
                "SELECT attstorage FROM pg_attribute "
                "WHERE attrelid = 'inference_answers'::regclass AND attname = 'sealed'"
            ).scalar_one()
        assert storage == "e"
    finally:
        ledger.close()


# -- payloads migrate ----------------------------------------------------------------------


def moved(source: Any, target: Any, names: tuple[str, str]) -> Any:
    return migrate(
        source,
        target,
        names=names,
        bound_to_target=False,
        switch=lambda: None,
        erased=lambda _specimen: False,
    )


def answers_of(store: Any) -> dict[tuple[str, str], dict[str, bytes]]:
    return {(t, s): dict(store.answers(t, s)) for t, s in store.specimens()}


def test_migrate_carries_answers_both_ways(database: Database, tmp_path: Path) -> None:
    files, db = PayloadStore(root=tmp_path / "payloads"), database.store
    for specimen in ("sp-1", "sp-2", "sp-3"):
        sealed_specimen(files, specimen)
    files.keep_answer("acme", "sp-1", ONE, os.urandom(300))
    files.keep_answer("acme", "sp-1", TWO, os.urandom(5000))
    files.keep_answer("acme", "sp-2", THREE, b"")  # sp-3 has none
    want = answers_of(files)

    there = moved(files, db, ("files", "database"))
    assert (there.copied, there.answers) == (3, 3)
    assert answers_of(db) == want
    assert files.specimens() == [] and not list((tmp_path / "payloads").rglob("*.ct"))

    back = moved(db, files, ("database", "files"))
    assert (back.copied, back.answers) == (3, 3)
    assert answers_of(files) == want
    assert db.specimens() == [] and database.rows("sp-1") == database.rows("sp-2") == 0


class Interrupted(Exception):
    pass


class LosingAnswers:
    """A target that is killed after keeping ``after`` answers, or that drops one."""

    def __init__(self, inner: Any, *, after: int | None = None, drop: bool = False) -> None:
        self._inner, self._after, self._drop, self._kept = inner, after, drop, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def keep_answer(self, tenant_id: str, specimen_id: str, key: str, sealed: bytes) -> None:
        if self._after is not None and self._kept == self._after:
            raise Interrupted("killed")
        self._kept += 1
        if not (self._drop and self._kept == 1):
            self._inner.keep_answer(tenant_id, specimen_id, key, sealed)


def test_an_interrupted_copy_of_answers_is_copied_again(database: Database, tmp_path: Path) -> None:
    files, db = PayloadStore(root=tmp_path / "payloads"), database.store
    sealed_specimen(files, "sp-1")
    files.keep_answer("acme", "sp-1", ONE, b"sealed one")
    files.keep_answer("acme", "sp-1", TWO, b"sealed two")
    want = answers_of(files)
    with pytest.raises(Interrupted):
        moved(files, LosingAnswers(db, after=1), ("files", "database"))
    assert len(list(db.answers("acme", "sp-1"))) == 1  # half the answers, frames all
    assert answers_of(files) == want  # the source untouched
    again = moved(files, db, ("files", "database"))
    assert (again.copied, again.already_copied, again.answers) == (1, 0, 2)
    assert answers_of(db) == want


def test_a_copy_missing_an_answer_leaves_the_source_as_it_was(
    database: Database, tmp_path: Path
) -> None:
    files, db = PayloadStore(root=tmp_path / "payloads"), database.store
    sealed_specimen(files, "sp-1")
    files.keep_answer("acme", "sp-1", ONE, b"sealed one")
    files.keep_answer("acme", "sp-1", TWO, b"sealed two")
    with pytest.raises(InfrastructureError) as failed:
        moved(files, LosingAnswers(db, drop=True), ("files", "database"))
    assert "differs from its source" in str(failed.value)
    assert len(list(files.answers("acme", "sp-1"))) == 2


def test_another_answer_under_the_same_key_is_not_a_copy(
    database: Database, tmp_path: Path
) -> None:
    """A target whose answer differs from the source's under the same key holds another
    specimen's record, not an interrupted copy: refused, never erased."""
    files, db = PayloadStore(root=tmp_path / "payloads"), database.store
    sealed_specimen(files, "sp-1")
    files.keep_answer("acme", "sp-1", ONE, b"sealed one")
    db.import_specimen("acme", "sp-1", wrapped=WRAPPED, frames=files.frames("acme", "sp-1"))
    db.keep_answer("acme", "sp-1", ONE, b"another")
    with pytest.raises(InfrastructureError) as failed:
        moved(files, db, ("files", "database"))
    assert "already holds another specimen" in str(failed.value)
    assert db.answer("acme", "sp-1", ONE) == b"another"


# -- through the audit's record ------------------------------------------------------------


def test_the_record_seals_what_the_store_keeps(store: Any, tmp_path: Path) -> None:
    sealed_specimen(store, "sp-1")
    record = InferenceRecord(store, tenant_id="acme", specimen_id="sp-1", key=os.urandom(32))
    asked = {"boundary": "risk-model", "body": {"messages": [CANARY + " asked"]}}
    answer = {"status": 200, "body": {"json": {"content": CANARY + " answered"}}}
    key = record.key_of(asked)
    assert record.get(key) is None
    record.put(key, answer)
    assert record.get(key) == answer
    (name, blob), *rest = store.answers("acme", "sp-1")
    assert (name, rest) == (key, []) and find_canaries(blob, [CANARY]) == []
    # the blob is bound to its key: filed under another it opens nowhere
    store.keep_answer("acme", "sp-1", ONE, blob)
    with pytest.raises(DecryptionFailed):
        record.get(ONE)
    # nothing of the answer in the store's files, or in the SQLite database and its WAL
    assert scan_tree(tmp_path, [CANARY]) == {}


# -- an audit on a database-store home -------------------------------------------------------

GRANT = {
    "boundary": "risk-model",
    "endpoint": "local",
    "model": ha.MODEL_NAME,
    "vary": ["seed"],
    "caps": {"calls": 100, "input_tokens": 10000, "output_tokens": 10000, "wall_seconds": 60},
}


def audited(home: Path, specimen: str) -> dict[str, Any]:
    """What each arm of an audit asked: ``audit --inference`` as a user runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    done = cli_runner.run_cli(
        home,
        "audit",
        specimen,
        *("--call", "main/risk#0", "--field", "/risk", "--strategy", "replace"),
        *("--value", "0.2", "--samples", "2", "--purpose", "answers in the database"),
        *("--inference", json.dumps(GRANT), "--json"),
        env={**env, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stderr
    arms: dict[str, Any] = json.loads(done.stdout)["inference"]["arms"]
    return arms


def test_an_audit_on_a_database_home_keeps_its_answers_as_rows(tmp_path: Path) -> None:
    """The audit's answers are rows of the shared database, served to the next audit
    from there, sealed, and erased with the specimen; the home holds no answer file."""
    root = tmp_path / "home"
    home = Home.init(root)
    with (root / "config.toml").open("a") as config:
        config.write('\n[payloads]\nstore = "database"\n')
    with Runtime.open(home, env={}) as runtime, ha.serve_model() as url:
        assert runtime.payloads.store == "database"
        inputs = {"applicant": "A-7", "base_url": url}
        specimen = capture(runtime, ha.HTTP_AGENT, inputs, tenant_id="acme", seed=5).specimen_id
    with ha.serve_model() as endpoint:
        with (root / "config.toml").open("a") as config:
            config.write(f'\n[inference.endpoints.local]\nurl = "{endpoint.removesuffix("/v1")}"\n')
        first, second = audited(root, specimen), audited(root, specimen)

    asked = sum(tally["asked"] for tally in first.values())
    assert asked > 0
    # the second audit asked the endpoint nothing: every answer came from the rows
    assert sum(tally["asked"] for tally in second.values()) == 0
    assert sum(tally["from_record"] for tally in second.values()) == asked + sum(
        tally["from_record"] for tally in first.values()
    )
    engine = sa.create_engine(f"sqlite:///{home.ledger_path}", poolclass=sa.NullPool)
    try:
        database = Database(DatabasePayloadStore(engine=engine), engine)
        assert database.rows(specimen) == asked
        assert [p for p in root.rglob("*") if p.name in ("inference", "answers")] == []
        assert not list((root / "payloads").rglob("*.ct"))
        # sealed: neither the prompt nor the model's answer in the database, its WAL or
        # any file of the home
        assert scan_tree(root, [ha.CANARY, "risk of the applicant"]) == {}

        with Runtime.open(home, env={}) as runtime:
            erase_specimen(runtime, specimen, now=utc_now())
        assert database.rows(specimen) == 0
    finally:
        engine.dispose()
