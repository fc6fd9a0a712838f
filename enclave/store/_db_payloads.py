"""The encrypted payload store in the ledger's database: ciphertext and wrapped keys only.

The same interface and the same bytes as the file store (``enclave.store._payloads``),
for workers on other hosts that share nothing but the database and the key service:

- ``payload_keys``: one row per specimen, its wrapped data key (``WrappedKey`` JSON);
- ``payload_chunks``: the specimen's frames (``enclave.store._frames``) in order, whole
  frames only, one row per ~1 MiB (per step when ``durable``), numbered from 0; the last
  row ends with the sealed ``#end`` frame. Concatenated they are the file store's
  ``payloads.ct``, byte for byte;
- ``inference_answers``: the answers audits of the specimen obtained by governed
  inference, one row each, as the file store's ``answers/<key>.ct`` holds them (sealed
  by ``InferenceRecord``). A row is inserted once and never updated: the first answer
  kept under a key stays (``INSERT ... ON CONFLICT DO NOTHING``).

A field's reference is the file store's, ``<tenant>/<specimen>/payloads.ct``: the ledger
records the same reference whichever store holds the ciphertext.

Reading enforces the frame invariants of ``enclave.store._frames`` with ``in_order``:
chunk rows are numbered 0, 1, 2, ... with no gap, and frames must come in the order they
were written, so a dropped, duplicated, reordered or truncated chunk or frame, or one
moved from another specimen, fails as ``DecryptionFailed`` — rows are easier to shuffle
than the bytes of one file.

Erasing a specimen deletes its key row, its chunk rows and its answer rows in one
transaction (crypto-shredding; see ``docs/payloads.md`` for what WAL and backups still hold).
Database failures leave as ``InfrastructureError`` naming no value.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from ledger import Conflict, LedgerError, raise_unchained
from ledger.transactions import WRITE_OPTION, guarded, insert_new, is_driver_error, read, write

from .._errors import BadInput, DecryptionFailed, InfrastructureError
from ..keys import WrappedKey
from ._frames import FrameOpener, FrameSealer, field_key, pack_frame, split_frames
from ._payloads import PAYLOAD_FILE
from ._refs import validate_answer_key, validate_id

__all__ = ["DatabasePayloadStore", "DatabaseSpecimenWriter", "field_key"]

CHUNK_BYTES = 1 << 20  # a chunk row is written once ~1 MiB of frames is buffered


@contextmanager
def _database(operation: str) -> Iterator[None]:
    try:
        yield
    except LedgerError:
        raise InfrastructureError(
            f"the payload store's database is unavailable ({operation})"
        ) from None


def _specimen(table: sa.Table, tenant_id: str, specimen_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(table.c.tenant_id == tenant_id, table.c.specimen_id == specimen_id)


def _ids(tenant_id: str, specimen_id: str) -> None:
    validate_id(tenant_id, what="tenant id")
    validate_id(specimen_id, what="specimen id")


class DatabaseSpecimenWriter:
    """Encrypts one specimen's fields and inserts its frames as chunk rows.

    ``durable=True`` inserts (and commits) a chunk after every step; otherwise frames are
    buffered and a chunk is handed to a background insert once ~1 MiB is pending, never
    holding a whole run in memory (``_BackgroundRows``). ``close`` inserts the last
    chunk, ending with the end frame, and returns once every chunk is committed: the seal
    is the commit point either way, and ``discard`` deletes everything written for the
    specimen.
    """

    def __init__(
        self, *, engine: Engine, tenant_id: str, specimen_id: str, data_key: bytes, durable: bool
    ) -> None:
        self._sealer = FrameSealer(tenant_id=tenant_id, specimen_id=specimen_id, data_key=data_key)
        self._engine = engine
        self._tenant, self._specimen = tenant_id, specimen_id
        self._durable = durable
        self._buffer = bytearray()
        rows = _ChunkRows(engine, tenant_id, specimen_id, relaxed=not durable)
        # durable: each step's chunk is committed before add_step returns
        self._rows: _ChunkRows | _BackgroundRows = rows if durable else _BackgroundRows(rows)
        self._closed = False
        self._ref = f"{tenant_id}/{specimen_id}/{PAYLOAD_FILE}"

    @property
    def ref(self) -> str:
        return self._ref

    def add_step(self, seq: int, fields: Iterable[tuple[str, str, bytes]]) -> None:
        """``fields``: (side, path, canonical plaintext bytes) for each retained field."""
        if self._closed:
            raise ValueError("the writer is closed")
        self._sealer.seal_step(seq, fields, self._buffer.extend)
        if self._durable or len(self._buffer) >= CHUNK_BYTES:
            self._insert_chunk()

    def _insert_chunk(self) -> None:
        if not self._buffer:
            return
        self._rows.insert(self._buffer)
        self._buffer.clear()

    def close(self) -> None:
        """Seal the frame count and insert the last chunk (idempotent)."""
        if not self._closed:
            self._closed = True  # a failed seal is not tried twice: the run is discarded
            self._buffer += self._sealer.end_frame()
            try:
                self._rows.insert(self._buffer, final=True)
                self._buffer.clear()
            except BaseException:
                self._rows.cancel()  # the background insert stops either way
                raise
            self._rows.close()  # waits for every chunk; raises if one failed

    def discard(self) -> None:
        """Abandon the specimen: delete its chunk rows and its key row."""
        self._closed = True
        self._buffer.clear()
        self._rows.cancel()
        with _database("discard"), write(self._engine, operation="payload_discard") as conn:
            _delete(conn, self._tenant, self._specimen)


class _ChunkRows:
    """Inserts one specimen's chunk rows, numbered from 0, each in a short transaction of
    its own on one connection held from the first chunk to the seal (a connection from
    the pool per chunk would pay a checkout, a liveness ping and a reset every time).

    On PostgreSQL a chunk is one ``INSERT`` in autocommit, sent through the driver's
    cursor with the statement compiled once from the table: one round trip, and none of
    SQLAlchemy's per-statement bookkeeping, which cost about 0.1 ms a step in durable
    capture (``benchmarks/capture.py --payloads database``). SQLite takes its write lock
    with ``BEGIN IMMEDIATE`` as every ledger write does.

    ``relaxed`` (batched capture on PostgreSQL): the chunks before the last commit with
    ``synchronous_commit`` off — not waiting for their WAL to reach the disk — and the
    last one, holding the end frame, with it on. WAL is flushed in order, so the seal's
    commit makes every chunk before it durable too: the file store's single fsync at
    the seal, in the database's terms. A crash before the seal loses an unsealed run,
    which is discarded either way."""

    def __init__(
        self, engine: Engine, tenant_id: str, specimen_id: str, *, relaxed: bool = False
    ) -> None:
        self._engine = engine
        self._row: dict[str, object] = {"tenant_id": tenant_id, "specimen_id": specimen_id}
        self._postgres = engine.dialect.name == "postgresql"
        self._relaxed = relaxed and self._postgres
        self._insert_sql = ""  # PostgreSQL: compiled from the table when connecting
        self._conn: sa.Connection | None = None
        self._cursor: Any = None  # PostgreSQL: the driver's cursor on ``_conn``
        self._synchronous = True  # the session's setting on the held connection
        self.count = 0

    def insert(self, frames: bytes | bytearray, *, final: bool = False) -> None:
        failed = False
        try:
            self._insert({**self._row, "chunk_no": self.count, "frames": bytes(frames)}, final)
        except LedgerError:  # logged by name and code only
            failed = True
        if failed:  # raised outside the handler: nothing is chained
            self.close()
            raise InfrastructureError("the payload store's database is unavailable (write chunk)")
        self.count += 1

    @guarded("payload_chunk")
    def _insert(self, row: dict[str, object], final: bool) -> None:
        from ledger.tables import PayloadChunkRow, table_of

        payload_chunks = table_of(PayloadChunkRow)
        if self._conn is None:
            self._connect()
        if self._cursor is not None:
            if self._relaxed:
                self._set_synchronous(final)
            self._cursor.execute(self._insert_sql, row)
        else:
            assert self._conn is not None
            with self._conn.begin():
                self._conn.execute(payload_chunks.insert(), row)

    def _connect(self) -> None:
        from ledger.tables import PayloadChunkRow, table_of

        payload_chunks = table_of(PayloadChunkRow)
        if self._postgres:
            self._insert_sql = str(payload_chunks.insert().compile(dialect=self._engine.dialect))
            self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._cursor = self._conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        else:
            self._conn = self._engine.connect().execution_options(**{WRITE_OPTION: True})

    def _set_synchronous(self, on: bool) -> None:
        """A session setting on the held connection, kept until changed."""
        if self._synchronous != on:
            self._cursor.execute(f"SET synchronous_commit TO {'on' if on else 'off'}")
            self._synchronous = on

    def close(self) -> None:
        conn, cursor = self._conn, self._cursor
        self._conn = self._cursor = None
        if conn is None:
            return
        try:
            if not self._synchronous:
                # never hand the pool a connection that commits without waiting for the disk
                cursor.execute("SET synchronous_commit TO on")
                self._synchronous = True
            if cursor is not None:
                cursor.close()
        except Exception as exc:  # noqa: BLE001 - a broken connection is not pooled again
            if not is_driver_error(exc):
                raise
            conn.invalidate()
        try:
            conn.close()
        except (sa_exc.SQLAlchemyError, sqlite3.Error):
            pass  # a broken connection is discarded by the pool either way

    cancel = close


class _BackgroundRows:
    """Hands chunk rows to one thread that inserts them in order while capture goes on,
    as the file store hands its writes to the kernel's writeback. At most one chunk
    waits while another is being inserted, so memory stays bounded. A failure there is
    raised (one line, nothing chained) by the next ``insert`` or by ``close``, which
    returns only once every chunk handed over is committed."""

    def __init__(self, rows: _ChunkRows) -> None:
        self._rows = rows
        self._queue: queue.Queue[tuple[bytes, bool] | None] = queue.Queue(maxsize=1)
        self._thread: threading.Thread | None = None
        self._failed = False
        self._cancelled = False

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._failed or self._cancelled:
                continue  # drained, never inserted after a failure (no gap in the numbers)
            try:
                self._rows.insert(item[0], final=item[1])
            except Exception:  # noqa: BLE001 - reported to the capturing thread, opaquely
                self._failed = True
        self._rows.close()

    def _raise_failure(self) -> None:
        if self._failed:
            raise InfrastructureError("the payload store's database is unavailable (write chunk)")

    def insert(self, frames: bytes | bytearray, *, final: bool = False) -> None:
        self._raise_failure()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="payload-chunks", daemon=True)
            self._thread.start()
        self._queue.put((bytes(frames), final))

    def close(self) -> None:
        """Wait until every chunk handed over is inserted; raise if one was not."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        else:
            self._rows.close()
        self._raise_failure()

    def cancel(self) -> None:
        """Stop inserting (``discard``): chunks still waiting are dropped."""
        self._cancelled = True
        try:
            self.close()
        except InfrastructureError:
            pass  # discarding anyway


def _insert_chunk(
    engine: Engine, tenant_id: str, specimen_id: str, number: int, frames: bytes | bytearray
) -> None:
    from ledger.tables import PayloadChunkRow, table_of

    payload_chunks = table_of(PayloadChunkRow)
    row = {
        "tenant_id": tenant_id,
        "specimen_id": specimen_id,
        "chunk_no": number,
        "frames": bytes(frames),
    }
    with _database("write chunk"), write(engine, operation="payload_chunk") as conn:
        conn.execute(payload_chunks.insert().values(row))


def _delete(conn: sa.Connection, tenant_id: str, specimen_id: str) -> bool:
    """Delete a specimen's key row, chunk rows and answer rows (in the caller's
    transaction)."""
    from ledger.tables import InferenceAnswerRow, PayloadChunkRow, PayloadKeyRow, table_of

    deleted = 0
    for row in (PayloadKeyRow, PayloadChunkRow, InferenceAnswerRow):
        table = table_of(row)
        deleted += conn.execute(
            sa.delete(table).where(_specimen(table, tenant_id, specimen_id))
        ).rowcount
    return bool(deleted)


class DatabasePayloadStore:
    """``PayloadStore``'s interface on a SQLAlchemy engine (the ledger's)."""

    def __init__(self, *, engine: Engine) -> None:
        self._engine = engine

    def open_writer(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        data_key: bytes,
        durable: bool,
    ) -> DatabaseSpecimenWriter:
        _ids(tenant_id, specimen_id)
        self._insert_key(tenant_id, specimen_id, wrapped)
        return DatabaseSpecimenWriter(
            engine=self._engine,
            tenant_id=tenant_id,
            specimen_id=specimen_id,
            data_key=data_key,
            durable=durable,
        )

    def _insert_key(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> None:
        from ledger.tables import PayloadChunkRow, PayloadKeyRow, table_of

        payload_chunks = table_of(PayloadChunkRow)
        payload_keys = table_of(PayloadKeyRow)
        row = {
            "tenant_id": tenant_id,
            "specimen_id": specimen_id,
            "wrapped_key": json.dumps(wrapped.to_dict()),
        }
        try:
            with write(self._engine, operation="payload_key") as conn:
                taken = conn.execute(
                    sa.select(sa.literal(1)).where(
                        _specimen(payload_chunks, tenant_id, specimen_id)
                    )
                ).first()
                if taken is not None:  # chunks without a key: a shredded specimen's leftovers
                    raise Conflict("payload_key: the specimen id is in use")
                conn.execute(payload_keys.insert().values(row))
        except Conflict:
            raise BadInput("specimen id is already in use") from None
        except LedgerError:
            raise InfrastructureError("the payload store's database is unavailable") from None

    def wrapped_key(self, tenant_id: str, specimen_id: str) -> WrappedKey:
        from ledger.tables import PayloadKeyRow, table_of

        payload_keys = table_of(PayloadKeyRow)
        _ids(tenant_id, specimen_id)
        with _database("read key"), read(self._engine, operation="payload_key") as conn:
            text = conn.execute(
                sa.select(payload_keys.c.wrapped_key).where(
                    _specimen(payload_keys, tenant_id, specimen_id)
                )
            ).scalar_one_or_none()
        if text is None:
            raise DecryptionFailed()
        try:
            return WrappedKey.from_dict(json.loads(text))
        except (TypeError, ValueError):  # a decode error's ``doc`` is the whole record
            raise_unchained(InfrastructureError("wrapped key record is unreadable"))

    def replace_wrapped_key(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> None:
        from ledger.tables import PayloadKeyRow, table_of

        payload_keys = table_of(PayloadKeyRow)
        _ids(tenant_id, specimen_id)
        with _database("replace key"), write(self._engine, operation="payload_key") as conn:
            done = conn.execute(
                sa.update(payload_keys)
                .where(_specimen(payload_keys, tenant_id, specimen_id))
                .values(wrapped_key=json.dumps(wrapped.to_dict()))
            )
        if done.rowcount != 1:
            raise DecryptionFailed()  # no key to replace: as if erased

    def chunks(self, tenant_id: str, specimen_id: str) -> Generator[bytes, None, None]:
        """The specimen's chunk rows in order, checked to be numbered 0, 1, 2, ...
        (whole frames each; no key needed). Read in one snapshot, a few rows at a time."""
        from ledger.tables import PayloadChunkRow, table_of

        payload_chunks = table_of(PayloadChunkRow)
        _ids(tenant_id, specimen_id)
        query = (
            sa.select(payload_chunks.c.chunk_no, payload_chunks.c.frames)
            .where(_specimen(payload_chunks, tenant_id, specimen_id))
            .order_by(payload_chunks.c.chunk_no)
            .execution_options(yield_per=4)
        )
        with (
            _database("read chunks"),
            read(self._engine, snapshot=True, operation="payload_read") as conn,
            conn.execute(query) as rows,  # closed before the transaction ends, even early
        ):
            for expected, (number, frames) in enumerate(rows):
                if number != expected:
                    raise DecryptionFailed()  # a chunk dropped or renumbered
                yield bytes(frames)

    def read_fields(
        self, tenant_id: str, specimen_id: str, *, data_key: bytes
    ) -> dict[tuple[int, str, str], bytes]:
        """Decrypt every stored field of one specimen: {(seq, side, path): plaintext}."""
        opener = FrameOpener(
            tenant_id=tenant_id, specimen_id=specimen_id, data_key=data_key, in_order=True
        )
        with closing(self.chunks(tenant_id, specimen_id)) as chunks:  # a failure ends the read
            for chunk in chunks:
                opener.feed(chunk)
        return opener.fields()

    # -- whole specimens, no key needed (``payloads migrate``) ---------------------------

    def specimens(self) -> list[tuple[str, str]]:
        """(tenant, specimen) of every specimen with a wrapped key, sorted."""
        from ledger.tables import PayloadKeyRow, table_of

        payload_keys = table_of(PayloadKeyRow)
        query = sa.select(payload_keys.c.tenant_id, payload_keys.c.specimen_id).order_by(
            payload_keys.c.tenant_id, payload_keys.c.specimen_id
        )
        with _database("list"), read(self._engine, operation="payload_list") as conn:
            return [(str(tenant), str(specimen)) for tenant, specimen in conn.execute(query)]

    def frames(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[bytes, bytes]]:
        """The specimen's raw frames (key, blob) in stored order, a chunk at a time."""
        with closing(self.chunks(tenant_id, specimen_id)) as chunks:
            for chunk in chunks:
                yield from split_frames(chunk)

    def import_specimen(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        frames: Iterable[tuple[bytes, bytes]],
    ) -> None:
        """Store a copy of another store's specimen: its wrapped key and its frames as
        they are, in ~1 MiB chunk rows (refused, ``BadInput``, when the id is in use)."""
        _ids(tenant_id, specimen_id)
        self._insert_key(tenant_id, specimen_id, wrapped)
        buffer, number = bytearray(), 0
        for key, blob in frames:
            buffer += pack_frame(key, blob)
            if len(buffer) >= CHUNK_BYTES:
                self._insert_chunk(tenant_id, specimen_id, number, buffer)
                buffer, number = bytearray(), number + 1
        self._insert_chunk(tenant_id, specimen_id, number, buffer)

    def _insert_chunk(
        self, tenant_id: str, specimen_id: str, number: int, frames: bytes | bytearray
    ) -> None:
        if frames:
            _insert_chunk(self._engine, tenant_id, specimen_id, number, frames)

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        """Crypto-shred: delete the wrapped key row, the chunk rows and the answer rows in
        one transaction."""
        _ids(tenant_id, specimen_id)
        with _database("erase"), write(self._engine, operation="payload_erase") as conn:
            return _delete(conn, tenant_id, specimen_id)

    # -- governed inference: the audits' sealed answers ---------------------------------

    def answer(self, tenant_id: str, specimen_id: str, key: str) -> bytes | None:
        """The sealed answer kept under ``key``, or None."""
        from ledger.tables import InferenceAnswerRow, table_of

        answers = table_of(InferenceAnswerRow)
        _ids(tenant_id, specimen_id)
        validate_answer_key(key)
        query = sa.select(answers.c.sealed).where(
            _specimen(answers, tenant_id, specimen_id), answers.c.answer_key == key
        )
        with _database("read answer"), read(self._engine, operation="inference_answer") as conn:
            sealed = conn.execute(query).scalar_one_or_none()
        return None if sealed is None else bytes(sealed)

    def keep_answer(self, tenant_id: str, specimen_id: str, key: str, sealed: bytes) -> None:
        """Keep ``sealed`` under ``key`` unless an answer is kept there already; as if
        the key were gone (``DecryptionFailed``) when the specimen's key row is not here.
        The key row is locked first, so an erasure either comes after (and deletes the
        answer with the rest) or before (and the answer is refused)."""
        from ledger.tables import InferenceAnswerRow, PayloadKeyRow, table_of

        answers, payload_keys = table_of(InferenceAnswerRow), table_of(PayloadKeyRow)
        _ids(tenant_id, specimen_id)
        validate_answer_key(key)
        row = {
            "tenant_id": tenant_id,
            "specimen_id": specimen_id,
            "answer_key": key,
            "sealed": bytes(sealed),
        }
        held = (
            sa.select(payload_keys.c.specimen_id)
            .where(_specimen(payload_keys, tenant_id, specimen_id))
            .with_for_update()  # SQLite: the write transaction already serialises
        )
        with _database("keep answer"), write(self._engine, operation="inference_answer") as conn:
            if conn.execute(held).first() is None:
                raise DecryptionFailed()
            conn.execute(insert_new(conn, answers).values(row))

    def answers(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[str, bytes]]:
        """Every (key, sealed answer) of the specimen, in key order, read in one
        snapshot a few rows at a time."""
        _ids(tenant_id, specimen_id)
        return self._answers(tenant_id, specimen_id)

    def _answers(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[str, bytes]]:
        from ledger.tables import InferenceAnswerRow, table_of

        answers = table_of(InferenceAnswerRow)
        query = (
            sa.select(answers.c.answer_key, answers.c.sealed)
            .where(_specimen(answers, tenant_id, specimen_id))
            .order_by(answers.c.answer_key)
            .execution_options(yield_per=16)
        )
        with (
            _database("read answers"),
            read(self._engine, snapshot=True, operation="inference_answers") as conn,
            conn.execute(query) as rows,  # closed before the transaction ends, even early
        ):
            for key, sealed in rows:
                yield validate_answer_key(str(key)), bytes(sealed)
