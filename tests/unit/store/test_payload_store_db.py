"""The payload store contract, run against the file store and the database store on
SQLite and on a real PostgreSQL: round trips, streaming in bounded chunks, tampering with
frames or chunk rows fails opaquely (``DecryptionFailed("decryption failed")``), erasure
shreds key and ciphertext together, ids are validated, keys are replaced."""

from __future__ import annotations

import pkgutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import BadInput, DecryptionFailed, InfrastructureError
from enclave.keys import WrappedKey
from enclave.store import DatabasePayloadStore, FrameOpener, FrameSealer, PayloadStore, split_frames
from ledger import Ledger
from ledger.tables import METADATA, PAYLOAD_TABLES, PayloadChunkRow, PayloadKeyRow, table_of

payload_keys, payload_chunks = table_of(PayloadKeyRow), table_of(PayloadChunkRow)

WRAPPED = WrappedKey(provider="local", kek_id="acme", kek_version=1, blob="AAAA")
ROTATED = WrappedKey(provider="local", kek_id="acme", kek_version=2, blob="BBBB")
KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
STEPS = {
    0: [("response", "/a", b'"alpha-canary"'), ("response", "/b", b"[1,2,3]")],
    1: [("request", "/q", b'{"k":"v"}'), ("response", "/r", b"0.5")],
    2: [("identity", "/who", b'"bob"')],
}
WANT = {(seq, side, path): plain for seq, fields in STEPS.items() for side, path, plain in fields}
Frames = list[tuple[bytes, bytes]]


def pack(items: Frames) -> bytes:
    return b"".join(struct.pack(">I", len(k)) + k + struct.pack(">I", len(b)) + b for k, b in items)


@dataclass
class Backend:
    """A store plus raw access to what it stored, to tamper with it."""

    name: str
    store: Any
    root: Path
    engine: sa.Engine | None = None

    def stored_frames(self, specimen: str, tenant: str = "acme") -> Frames:
        if self.engine is None:
            return list(split_frames((self.root / tenant / specimen / "payloads.ct").read_bytes()))
        return [frame for chunk in self.chunks(specimen, tenant) for frame in split_frames(chunk)]

    def store_frames(self, specimen: str, items: Frames, tenant: str = "acme") -> None:
        """Replace what is stored for the specimen with these frames (one chunk row)."""
        if self.engine is None:
            (self.root / tenant / specimen / "payloads.ct").write_bytes(pack(items))
        else:
            self.set_chunks(specimen, [pack(items)], tenant)

    def chunks(self, specimen: str, tenant: str = "acme") -> list[bytes]:
        assert self.engine is not None
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(payload_chunks.c.frames)
                .where(payload_chunks.c.tenant_id == tenant)
                .where(payload_chunks.c.specimen_id == specimen)
                .order_by(payload_chunks.c.chunk_no)
            )
            return [bytes(row[0]) for row in rows]

    def set_chunks(
        self, specimen: str, chunks: list[bytes], tenant: str = "acme", numbers: Any = None
    ) -> None:
        assert self.engine is not None
        where = sa.and_(
            payload_chunks.c.tenant_id == tenant, payload_chunks.c.specimen_id == specimen
        )
        with self.engine.begin() as conn:
            conn.execute(sa.delete(payload_chunks).where(where))
            for number, frames in zip(numbers or range(len(chunks)), chunks, strict=True):
                conn.execute(
                    payload_chunks.insert().values(
                        tenant_id=tenant, specimen_id=specimen, chunk_no=number, frames=frames
                    )
                )

    def rows(self, specimen: str) -> tuple[int, int]:
        assert self.engine is not None
        with self.engine.connect() as conn:
            return tuple(  # type: ignore[return-value]
                conn.execute(
                    sa.select(sa.func.count()).where(table.c.specimen_id == specimen)
                ).scalar_one()
                for table in (payload_keys, payload_chunks)
            )


def open_backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if kind == "files":
        yield Backend("files", PayloadStore(root=tmp_path / "payloads"), tmp_path / "payloads")
        return
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    ledger = Ledger.open(url)
    try:
        ledger.migrate()
        engine = ledger.engine
        yield Backend(kind, DatabasePayloadStore(engine=engine), tmp_path, engine)
    finally:
        ledger.close()


@pytest.fixture(params=["files", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each store: the contract is the same."""
    yield from open_backend(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The database store, whose chunk rows the file store does not have."""
    yield from open_backend(request.param, request, tmp_path)


def write_specimen(
    backend: Backend,
    specimen: str,
    steps: dict[int, list[tuple[str, str, bytes]]] = STEPS,
    *,
    tenant: str = "acme",
    durable: bool = False,
) -> None:
    writer = backend.store.open_writer(
        tenant, specimen, wrapped=WRAPPED, data_key=KEY, durable=durable
    )
    for seq, fields in steps.items():
        writer.add_step(seq, fields)
    writer.close()
    writer.close()  # idempotent
    assert writer.ref == f"{tenant}/{specimen}/payloads.ct"


def fails(backend: Backend, specimen: str = "sp-1", tenant: str = "acme") -> None:
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        backend.store.read_fields(tenant, specimen, data_key=KEY)


# -- round trips ---------------------------------------------------------------------


def test_round_trip_and_no_plaintext_stored(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    write_specimen(backend, "sp-2", durable=True)
    for specimen in ("sp-1", "sp-2"):
        assert backend.store.read_fields("acme", specimen, data_key=KEY) == WANT
        assert backend.store.wrapped_key("acme", specimen) == WRAPPED
    stored = pack(backend.stored_frames("sp-1"))
    assert b"alpha-canary" not in stored and b"bob" not in stored
    assert [key for key, _ in backend.stored_frames("sp-1")][-1] == b"#end"
    assert backend.store.specimens() == [("acme", "sp-1"), ("acme", "sp-2")]


def test_frames_are_the_file_stores_bytes(backend: Backend, tmp_path: Path) -> None:
    """Both stores write one encoding: a database specimen's frames read back through
    the file store's reader, and the other way round."""
    write_specimen(backend, "sp-1")
    other = PayloadStore(root=tmp_path / "copy")
    other.import_specimen(
        "acme", "sp-1", wrapped=WRAPPED, frames=backend.store.frames("acme", "sp-1")
    )
    assert other.read_fields("acme", "sp-1", data_key=KEY) == WANT
    assert list(other.frames("acme", "sp-1")) == backend.stored_frames("sp-1")


def test_durable_inserts_each_step_batched_buffers(db_backend: Backend) -> None:
    store = db_backend.store
    durable = store.open_writer("acme", "sp-d", wrapped=WRAPPED, data_key=KEY, durable=True)
    durable.add_step(0, STEPS[0])
    assert len(db_backend.chunks("sp-d")) == 1
    durable.add_step(1, STEPS[1])
    assert len(db_backend.chunks("sp-d")) == 2
    durable.close()
    assert len(db_backend.chunks("sp-d")) == 3  # the end frame's chunk

    batched = store.open_writer("acme", "sp-b", wrapped=WRAPPED, data_key=KEY, durable=False)
    batched.add_step(0, STEPS[0])
    batched.add_step(1, STEPS[1])
    assert db_backend.chunks("sp-b") == []
    batched.close()
    assert len(db_backend.chunks("sp-b")) == 1
    assert store.read_fields("acme", "sp-b", data_key=KEY) == store.read_fields(
        "acme", "sp-d", data_key=KEY
    )


def test_batched_frames_reach_the_database_in_bounded_chunks(db_backend: Backend) -> None:
    """A large run is inserted as it goes, ~1 MiB a row, never held whole until the seal."""
    store = db_backend.store
    writer = store.open_writer("acme", "sp-big", wrapped=WRAPPED, data_key=KEY, durable=False)
    blob = bytes(range(256)) * 1024  # 256 KiB
    for seq in range(24):  # 6 MiB in all
        writer.add_step(seq, [("response", "/blob", blob)])
    before_seal = db_backend.chunks("sp-big")
    assert len(before_seal) >= 4  # 6 handed over; at most one waits, one is being inserted
    assert all(len(chunk) < (1 << 20) + len(blob) + 256 for chunk in before_seal)
    writer.close()
    assert store.read_fields("acme", "sp-big", data_key=KEY) == {
        (seq, "response", "/blob"): blob for seq in range(24)
    }


def _synchronous_commit_of_pooled(engine: sa.Engine) -> set[str]:
    """``synchronous_commit`` of every connection the pool holds (checked out at once)."""
    conns = [engine.connect() for _ in range(engine.pool.checkedin() + 1)]
    try:
        return {str(c.exec_driver_sql("SHOW synchronous_commit").scalar()) for c in conns}
    finally:
        for conn in conns:
            conn.close()


def test_a_batched_seal_commits_synchronously_and_leaves_no_relaxed_connection(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the chunks before the seal commit without waiting for the WAL flush;
    the seal's chunk commits with it (so every chunk before it is durable too), and no
    connection goes back to the pool relaxed, sealed or discarded."""
    ledger = Ledger.open(postgres_url)
    try:
        ledger.migrate()
        engine = ledger.engine
        store = DatabasePayloadStore(engine=engine)
        seen: list[str] = []

        class Recording:  # the chunk writer's driver cursor, statements noted
            def __init__(self, cursor: Any) -> None:
                self._cursor = cursor

            def execute(self, statement: str, *args: Any) -> Any:
                seen.append(statement.split(" (")[0])
                return self._cursor.execute(statement, *args)

            def close(self) -> None:
                self._cursor.close()

        # white-box: the chunk writer's connection, a class private to the database store
        chunk_rows = "enclave.store._db_payloads._ChunkRows"
        connect = pkgutil.resolve_name(chunk_rows)._connect

        def recording_connect(rows: Any) -> None:
            connect(rows)
            rows._cursor = Recording(rows._cursor)

        monkeypatch.setattr(f"{chunk_rows}._connect", recording_connect)
        blob = bytes(range(256)) * 1024
        writer = store.open_writer("acme", "sp-r", wrapped=WRAPPED, data_key=KEY, durable=False)
        for seq in range(12):  # 3 MiB: chunks before the seal
            writer.add_step(seq, [("response", "/blob", blob)])
        writer.close()
        inserts = [i for i, s in enumerate(seen) if s.startswith("INSERT")]
        assert len(inserts) >= 3
        assert seen[0] == "SET synchronous_commit TO off"
        # the last INSERT (the end frame's chunk) runs after the setting is back on
        assert seen[inserts[-1] - 1] == "SET synchronous_commit TO on"
        assert "SET synchronous_commit TO on" not in seen[: inserts[-2]]
        assert _synchronous_commit_of_pooled(engine) == {"on"}
        # a run discarded mid-way returns its connection restored too
        dropped = store.open_writer("acme", "sp-x", wrapped=WRAPPED, data_key=KEY, durable=False)
        for seq in range(12):
            dropped.add_step(seq, [("response", "/blob", blob)])
        dropped.discard()
        assert _synchronous_commit_of_pooled(engine) == {"on"}
        assert store.read_fields("acme", "sp-r", data_key=KEY)[(11, "response", "/blob")] == blob
    finally:
        ledger.close()


def test_specimen_id_cannot_be_reused_and_discard_removes_everything(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    with pytest.raises(BadInput, match="^specimen id is already in use$"):
        backend.store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    writer = backend.store.open_writer("acme", "sp-2", wrapped=WRAPPED, data_key=KEY, durable=True)
    writer.add_step(0, STEPS[0])
    writer.discard()
    with pytest.raises(DecryptionFailed):
        backend.store.wrapped_key("acme", "sp-2")
    fails(backend, "sp-2")
    if backend.engine is not None:
        assert backend.rows("sp-2") == (0, 0)
    else:
        assert not (backend.root / "acme" / "sp-2").exists()
    assert backend.store.read_fields("acme", "sp-1", data_key=KEY) == WANT


# -- tampering with frames -------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        lambda items: items[1:],  # first field frame dropped
        lambda items: items[:1] + items[2:],  # a middle frame dropped
        lambda items: items[:-1],  # end frame dropped (truncated at a frame boundary)
        lambda items: items[:-2] + items[-1:],  # last field frame dropped
        lambda items: [items[0], *items],  # a frame duplicated
        lambda items: [*items, items[0]],  # a frame after the end
        lambda items: [*items, items[-1]],  # two end frames
        lambda items: [(items[1][0], items[0][1]), (items[0][0], items[1][1]), *items[2:]],
        lambda items: [(b"0/response/z", items[0][1]), *items[1:]],  # relabelled
        lambda items: [
            (items[0][0], items[0][1][:-1] + bytes([items[0][1][-1] ^ 1])),
            *items[1:],
        ],  # flipped
        lambda items: [],  # nothing at all
    ],
    ids=[
        "drop-first",
        "drop-middle",
        "drop-end",
        "drop-last-field",
        "dup",
        "after-end",
        "two-ends",
        "swapped-blobs",
        "relabelled",
        "flipped",
        "empty",
    ],
)
def test_tampered_frames_fail(backend: Backend, edit: Callable[[Frames], Frames]) -> None:
    write_specimen(backend, "sp-1")
    backend.store_frames("sp-1", edit(backend.stored_frames("sp-1")))
    fails(backend)


def test_truncated_bytes_fail(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    raw = pack(backend.stored_frames("sp-1"))
    for cut in (len(raw) - 1, 3, 7):
        if backend.engine is None:
            (backend.root / "acme" / "sp-1" / "payloads.ct").write_bytes(raw[:cut])
        else:
            backend.set_chunks("sp-1", [raw[:cut]])
        fails(backend)


def test_reordered_frames(backend: Backend) -> None:
    """The file store accepts field frames in any order (each is bound to its place);
    the database store, whose chunk rows are easy to shuffle, refuses any reordering."""
    write_specimen(backend, "sp-1")
    items = backend.stored_frames("sp-1")
    backend.store_frames("sp-1", [*reversed(items[:-1]), items[-1]])
    if backend.engine is None:
        assert backend.store.read_fields("acme", "sp-1", data_key=KEY) == WANT
    else:
        fails(backend)


def test_frames_moved_between_specimens_or_tenants_fail(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    write_specimen(backend, "sp-2", {0: STEPS[0]})
    write_specimen(backend, "sp-1", tenant="globex")
    one, two = backend.stored_frames("sp-1"), backend.stored_frames("sp-2")
    backend.store_frames("sp-2", one)  # another specimen's frames, whole
    fails(backend, "sp-2")
    backend.store_frames("sp-1", one, tenant="globex")  # another tenant's
    fails(backend, "sp-1", "globex")
    backend.store_frames("sp-1", [*one[:2], two[-1]])  # sp-2's end frame says "2 frames"
    fails(backend)


def test_wrong_key_and_unknown_specimen_fail_alike(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    for key in (OTHER_KEY, bytes(32)):
        with pytest.raises(DecryptionFailed, match="^decryption failed$"):
            backend.store.read_fields("acme", "sp-1", data_key=key)
    fails(backend, "sp-nope")
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        backend.store.wrapped_key("acme", "sp-nope")


# -- tampering with chunk rows ---------------------------------------------------------


def chunked(db_backend: Backend) -> list[bytes]:
    """sp-1 written durably: one chunk row per step, then the end frame's."""
    write_specimen(db_backend, "sp-1", durable=True)
    chunks = db_backend.chunks("sp-1")
    assert len(chunks) == 4
    return chunks


@pytest.mark.parametrize(
    ("chunks", "numbers"),
    [
        (lambda c: c[1:], None),  # first chunk dropped
        (lambda c: c[:1] + c[2:], None),  # a middle chunk dropped, renumbered
        (lambda c: c[:1] + c[2:], [0, 2, 3]),  # a middle chunk dropped, a gap left
        (lambda c: c[:-1], None),  # the end frame's chunk dropped
        (lambda c: [c[0], *c], None),  # a chunk duplicated
        (lambda c: [c[0], c[0], *c[2:]], None),  # a chunk written over another
        (lambda c: [c[1], c[0], *c[2:]], None),  # two chunks swapped
        (lambda c: [*c[:-2], c[-1], c[-2]], None),  # the end chunk moved forward
        (lambda c: [*c[:-1], c[-1][:-5]], None),  # the last chunk truncated
        (lambda c: [c[0][:-3], *c[1:]], None),  # a chunk cut inside a frame
        (lambda c: [*c, c[0]], None),  # a chunk after the end
        (lambda c: c, [1, 2, 3, 4]),  # numbering that does not start at 0
    ],
    ids=[
        "drop-first",
        "drop-middle",
        "gap",
        "drop-end",
        "dup",
        "overwrite",
        "swap",
        "end-forward",
        "truncate-last",
        "cut-frame",
        "after-end",
        "offset",
    ],
)
def test_tampered_chunks_fail(
    db_backend: Backend,
    chunks: Callable[[list[bytes]], list[bytes]],
    numbers: list[int] | None,
) -> None:
    db_backend.set_chunks("sp-1", chunks(chunked(db_backend)), numbers=numbers)
    fails(db_backend)


def test_chunk_moved_from_another_specimen_fails(db_backend: Backend) -> None:
    chunks = chunked(db_backend)
    write_specimen(db_backend, "sp-2", {0: [("response", "/a", b'"other"')]}, durable=True)
    theirs = db_backend.chunks("sp-2")
    db_backend.set_chunks("sp-1", [theirs[0], *chunks[1:]])
    fails(db_backend)


def test_chunks_read_back_untouched(db_backend: Backend) -> None:
    """The tampering helpers themselves change nothing when they write chunks back."""
    db_backend.set_chunks("sp-1", chunked(db_backend))
    assert db_backend.store.read_fields("acme", "sp-1", data_key=KEY) == WANT


# -- erasure, ids, keys ------------------------------------------------------------------


def test_erase_shreds_key_and_ciphertext(backend: Backend) -> None:
    write_specimen(backend, "sp-1", durable=True)
    write_specimen(backend, "sp-2")
    assert backend.store.erase("acme", "sp-1") is True
    assert backend.store.erase("acme", "sp-1") is False
    with pytest.raises(DecryptionFailed):
        backend.store.wrapped_key("acme", "sp-1")
    fails(backend)
    if backend.engine is not None:
        assert backend.rows("sp-1") == (0, 0)
    else:
        assert not (backend.root / "acme" / "sp-1").exists()
    assert backend.store.read_fields("acme", "sp-2", data_key=KEY) == WANT
    assert backend.store.specimens() == [("acme", "sp-2")]


def test_erase_is_one_transaction(db_backend: Backend) -> None:
    """When deleting the chunk rows fails after the key row is deleted, the key row is
    back: key and ciphertext go together or not at all."""
    write_specimen(db_backend, "sp-1")
    assert db_backend.engine is not None
    with db_backend.engine.begin() as conn:
        if db_backend.name == "sqlite":
            conn.exec_driver_sql(
                "CREATE TRIGGER keep_chunks BEFORE DELETE ON payload_chunks "
                "BEGIN SELECT RAISE(ABORT, 'kept'); END"
            )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'kept'; END $$"
            )
            conn.exec_driver_sql(
                "CREATE TRIGGER keep_chunks BEFORE DELETE ON payload_chunks "
                "FOR EACH ROW EXECUTE FUNCTION keep()"
            )
    with pytest.raises(InfrastructureError) as caught:
        db_backend.store.erase("acme", "sp-1")
    assert "kept" not in str(caught.value)
    assert db_backend.rows("sp-1") == (1, 1)
    assert db_backend.store.read_fields("acme", "sp-1", data_key=KEY) == WANT
    with db_backend.engine.begin() as conn:
        conn.exec_driver_sql(
            "DROP TRIGGER keep_chunks"
            + ("" if db_backend.name == "sqlite" else " ON payload_chunks")
        )
    assert db_backend.store.erase("acme", "sp-1") is True
    assert db_backend.rows("sp-1") == (0, 0)


def refuse_chunk_inserts(db_backend: Backend) -> Callable[[], None]:
    """A trigger that makes every chunk insert fail; returns its removal."""
    assert db_backend.engine is not None
    sqlite = db_backend.name == "sqlite"
    with db_backend.engine.begin() as conn:
        if sqlite:
            conn.exec_driver_sql(
                "CREATE TRIGGER no_chunks BEFORE INSERT ON payload_chunks "
                "BEGIN SELECT RAISE(ABORT, 'CANARY-refused'); END"
            )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'CANARY-refused'; END $$"
            )
            conn.exec_driver_sql(
                "CREATE TRIGGER no_chunks BEFORE INSERT ON payload_chunks "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )

    def remove() -> None:
        assert db_backend.engine is not None
        with db_backend.engine.begin() as conn:
            conn.exec_driver_sql(
                "DROP TRIGGER no_chunks" + ("" if sqlite else " ON payload_chunks")
            )

    return remove


@pytest.mark.parametrize("durable", [False, True], ids=["batched", "durable"])
def test_a_failed_chunk_insert_fails_the_capture(db_backend: Backend, durable: bool) -> None:
    """Batched chunks are inserted in the background while capture goes on; a failure
    there is raised by a later step or by the seal, one line naming no value, and the
    run is then discarded whole."""
    remove = refuse_chunk_inserts(db_backend)
    store = db_backend.store
    writer = store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=durable)
    blob = bytes(range(256)) * 1024  # 256 KiB: a chunk every four steps
    sealing = False
    with pytest.raises(InfrastructureError) as caught:
        for seq in range(12):
            writer.add_step(seq, [("response", "/blob", blob)])
        sealing = True
        writer.close()
    assert "CANARY" not in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    if not sealing:
        with pytest.raises(InfrastructureError):
            writer.close()  # no seal after a failed step
    writer.close()  # the seal is tried once: now there is nothing to do
    writer.discard()
    remove()
    assert db_backend.rows("sp-1") == (0, 0)
    fails(db_backend)


def test_discard_while_chunks_are_in_flight(db_backend: Backend) -> None:
    store = db_backend.store
    writer = store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    blob = bytes(range(256)) * 1024
    for seq in range(20):  # 5 MiB: chunks handed over, some still waiting
        writer.add_step(seq, [("response", "/blob", blob)])
    writer.discard()
    assert db_backend.rows("sp-1") == (0, 0)
    write_specimen(db_backend, "sp-2")  # the store is usable after it
    assert store.read_fields("acme", "sp-2", data_key=KEY) == WANT


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a\x00b", "é"])
def test_ids_are_validated(backend: Backend, bad: str) -> None:
    store = backend.store
    calls: list[Callable[[], object]] = [
        lambda: store.open_writer(bad, "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False),
        lambda: store.open_writer("acme", bad, wrapped=WRAPPED, data_key=KEY, durable=False),
        lambda: store.read_fields("acme", bad, data_key=KEY),
        lambda: store.wrapped_key(bad, "sp-1"),
        lambda: store.replace_wrapped_key("acme", bad, ROTATED),
        lambda: store.erase("acme", bad),
    ]
    for call in calls:
        with pytest.raises(BadInput):
            call()
    assert store.specimens() == []


def test_replace_wrapped_key(backend: Backend) -> None:
    write_specimen(backend, "sp-1")
    write_specimen(backend, "sp-2")
    backend.store.replace_wrapped_key("acme", "sp-1", ROTATED)
    assert backend.store.wrapped_key("acme", "sp-1") == ROTATED
    assert backend.store.wrapped_key("acme", "sp-2") == WRAPPED
    assert backend.store.read_fields("acme", "sp-1", data_key=KEY) == WANT
    with pytest.raises(DecryptionFailed):
        backend.store.replace_wrapped_key("acme", "sp-nope", ROTATED)
    backend.store.erase("acme", "sp-1")
    with pytest.raises(DecryptionFailed):
        backend.store.replace_wrapped_key("acme", "sp-1", ROTATED)


def test_writer_refuses_steps_after_close(backend: Backend) -> None:
    writer = backend.store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    writer.close()
    with pytest.raises(ValueError):
        writer.add_step(0, STEPS[0])
    assert backend.store.read_fields("acme", "sp-1", data_key=KEY) == {}


# -- the shared frame rules ------------------------------------------------------------


def test_order_is_checked_only_for_counter_nonces() -> None:
    """Frames from a writer with random nonces (before counter nonces) have no order to
    check and read in any order; counter-nonce frames must come in write order."""
    import os

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from enclave.store import END_KEY, end_aad, field_aad, pack_frame

    cipher = AESGCM(KEY)
    legacy = []
    for seq, fields in STEPS.items():
        for side, path, plain in fields:
            nonce = os.urandom(12)
            aad = field_aad("acme", "sp-1", seq, side, path)
            legacy.append(
                (f"{seq}/{side}{path}".encode(), nonce + cipher.encrypt(nonce, plain, aad))
            )
    nonce = os.urandom(12)
    count = struct.pack(">I", len(legacy))
    end = (END_KEY, nonce + cipher.encrypt(nonce, count, end_aad("acme", "sp-1")))
    opener = FrameOpener(tenant_id="acme", specimen_id="sp-1", data_key=KEY, in_order=True)
    opener.feed(pack([*reversed(legacy), end]))
    assert opener.fields() == WANT

    sealer = FrameSealer(tenant_id="acme", specimen_id="sp-1", data_key=KEY)
    parts: list[bytes] = []
    for seq, fields in STEPS.items():
        sealer.seal_step(seq, fields, parts.append)
    current = list(split_frames(b"".join(parts) + sealer.end_frame()))
    for order, ok in ((current, True), ([*reversed(current[:-1]), current[-1]], False)):
        opener = FrameOpener(tenant_id="acme", specimen_id="sp-1", data_key=KEY, in_order=True)
        opener.feed(pack_frame(b"", b"")[:0] + pack(order))
        if ok:
            assert opener.fields() == WANT
        else:
            with pytest.raises(DecryptionFailed):
                opener.fields()


def test_tables_match_the_migration(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    ledger = Ledger.open(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        ledger.migrate()
        metadata = sa.MetaData()
        for name in PAYLOAD_TABLES:
            METADATA.tables[name].to_metadata(metadata)

        def include_name(name: str | None, type_: str, _parent: Any) -> bool:
            return type_ != "table" or name in PAYLOAD_TABLES

        with ledger.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": include_name, "compare_type": True}
            )
            assert compare_metadata(context, metadata) == []
    finally:
        ledger.close()


def test_chunks_are_not_compressed_on_postgresql(postgres_url: str) -> None:
    """Ciphertext does not compress; PostgreSQL is told not to try (``EXTERNAL``), an
    attempt that cost more than the insert itself."""
    ledger = Ledger.open(postgres_url)
    try:
        ledger.migrate()
        with ledger.engine.connect() as conn:
            storage = conn.exec_driver_sql(
                "SELECT attstorage FROM pg_attribute "
                "WHERE attrelid = 'payload_chunks'::regclass AND attname = 'frames'"
            ).scalar_one()
        assert storage == "e"
    finally:
        ledger.close()
