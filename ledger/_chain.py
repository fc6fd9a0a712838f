"""The hash-linked, append-only entry chain.

Hash rule (the whole definition; ``tests/unit/ledger/test_ledger_chain.py`` recomputes it
independently)::

    entry_hash = "sha256:" + hex(SHA-256(canonical_json({
        "index": index,              # int, 0 for the first entry
        "kind": kind,                # str, e.g. "specimen.sealed"
        "subject": subject,          # str, e.g. a specimen id
        "body": body,                # JSON object
        "prev_hash": prev_hash,      # entry_hash of index - 1, GENESIS_HASH for index 0
        "recorded_at": recorded_at,  # ISO-8601 UTC text
    })))

``canonical_json`` is RFC 8785 (``ledger._canonical``), so the keys appear sorted:
body, index, kind, prev_hash, recorded_at, subject. The stored ``body_json`` column is
exactly ``canonical_json(body)``; the fast path below splices those bytes into the
envelope instead of serialising the body twice, which yields the same bytes.

Batch speed-ups that keep the bytes identical (property-tested against
``canonical_json``): a body made only of dicts with ASCII string keys, lists, strings,
booleans, ``None`` and integers is serialised by orjson directly (sorted keys, 53-bit
integer limit) — that is what ``canonical_json`` itself does for such values after its
validation walk; anything else (floats, non-ASCII keys, other types) takes
``canonical_json``. ``kind``/``subject`` encodings are memoised within a batch.

Invariants:

1. Indexes are dense from 0; ``prev_hash`` of entry *i* is ``entry_hash`` of *i - 1*.
2. Each entry is also a leaf of the ledger's RFC 9162 Merkle tree (``ledger._tree``):
   leaf hash = SHA-256(0x00 ‖ the entry's canonical bytes, ``entry_bytes``), added in
   the same transaction as the entry.
3. Appends serialise on the single ``ledger_tip`` row: ``SELECT ... FOR UPDATE`` on
   PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite (see ``ledger._engine``). The tip read,
   the inserts and the tip update commit together or not at all, so writers on any
   number of processes or hosts extend one chain. The primary key on the index is a
   second guard: a stale tip can only fail (``Conflict``), never fork.
4. Nothing here updates or deletes an entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from ._canonical import canonical_json
from ._records import EntryRecord, LedgerPosition
from ._statements import select_entries, select_tip
from ._tree import extend_tree
from .certificates.tlog import hash_leaf

__all__ = [
    "GENESIS_HASH",
    "Tip",
    "compute_entry_hash",
    "hash_envelope",
    "lock_tip",
    "append_rows",
    "caller_items",
    "iter_entry_rows",
    "body_json",
    "entry_bytes",
    "entry_leaf_hash",
    "stored_entry_bytes",
]

GENESIS_HASH = "sha256:" + "0" * 64

_INSERT_COLUMNS = (
    "entry_index",
    "kind",
    "subject",
    "body_json",
    "prev_hash",
    "entry_hash",
    "recorded_at",
)


_SCALARS = frozenset((str, bool, type(None), int))
_ORJSON_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


def _plain_dict(value: dict[Any, Any]) -> bool:
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is dict:
            if _plain_dict(item):
                continue
            return False
        if kind is list:
            if _plain_list(item):
                continue
            return False
        return False
    return True


def _plain_list(value: list[Any]) -> bool:
    for item in value:
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is dict:
            if _plain_dict(item):
                continue
            return False
        if kind is list:
            if _plain_list(item):
                continue
            return False
        return False
    return True


def body_json(body: Mapping[str, Any]) -> bytes:
    """``canonical_json(body)``, faster for plain bodies (same bytes, same errors)."""
    if type(body) is dict:
        try:
            if _plain_dict(body):
                return orjson.dumps(body, option=_ORJSON_CANONICAL)
        except (TypeError, RecursionError):  # huge int, lone surrogate, deep nesting
            pass
    return canonical_json(body)


@dataclass(frozen=True, slots=True)
class Tip:
    length: int
    head_hash: str


def hash_envelope(
    *,
    index: int,
    kind: str,
    subject: str,
    body: Mapping[str, Any],
    prev_hash: str,
    recorded_at: str,
) -> dict[str, Any]:
    """The object whose canonical digest is the entry hash (the documented rule)."""
    return {
        "index": index,
        "kind": kind,
        "subject": subject,
        "body": body,
        "prev_hash": prev_hash,
        "recorded_at": recorded_at,
    }


def compute_entry_hash(
    *,
    index: int,
    kind: str,
    subject: str,
    body_json: bytes,
    prev_hash: str,
    recorded_at: str,
) -> str:
    """The entry hash from the stored canonical body bytes (same bytes as the rule)."""
    return _hash(
        index,
        canonical_json(kind),
        canonical_json(subject),
        body_json,
        canonical_json(prev_hash),
        canonical_json(recorded_at),
    )


def _hash(
    index: int, kind: bytes, subject: bytes, body: bytes, prev: bytes, recorded: bytes
) -> str:
    data = entry_bytes(index, kind, subject, body, prev, recorded)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry_bytes(
    index: int, kind: bytes, subject: bytes, body: bytes, prev: bytes, recorded: bytes
) -> bytes:
    """The entry's canonical bytes: what its hash and its Merkle leaf are computed over
    (its keys in canonical order; each value already canonical JSON)."""
    return b'{"body":%b,"index":%d,"kind":%b,"prev_hash":%b,"recorded_at":%b,"subject":%b}' % (
        body,
        index,
        kind,
        prev,
        recorded,
        subject,
    )


def entry_canonical(entry: EntryRecord) -> bytes:
    """The entry's canonical bytes (``entry_bytes``) from its fields."""
    return entry_bytes(
        entry.index,
        canonical_json(entry.kind),
        canonical_json(entry.subject),
        canonical_json(entry.body),
        canonical_json(entry.prev_hash),
        canonical_json(entry.recorded_at),
    )


def entry_leaf_hash(entry: EntryRecord) -> bytes:
    """The entry's leaf in the ledger's Merkle tree: SHA-256(0x00 ‖ its canonical bytes)."""
    return hash_leaf(entry_canonical(entry))


def stored_entry_bytes(
    index: int, kind: str, subject: str, body_json: str, prev_hash: str, recorded_at: str
) -> bytes:
    """``entry_bytes`` of a stored row (its columns as the chain keeps them)."""
    return entry_bytes(
        index,
        canonical_json(kind),
        canonical_json(subject),
        body_json.encode(),
        canonical_json(prev_hash),
        canonical_json(recorded_at),
    )


def lock_tip(conn: sa.Connection) -> Tip:
    """Read the tip inside the caller's write transaction, holding its lock."""
    # SQLite's dialect renders no FOR UPDATE: BEGIN IMMEDIATE already holds the lock
    row = conn.execute(select_tip().with_for_update()).one()
    return Tip(length=int(row[0]), head_hash=str(row[1]))


RESERVED_PREFIX = "specimen."  # kinds only the ledger itself appends (sealing, erasure)


def caller_items(
    items: Iterable[tuple[str, str, Mapping[str, Any]]],
) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``items`` as a list, refused (``ValueError``) if one is not a (kind, subject,
    body) tuple or claims a kind reserved to the ledger — for appends a caller asks for."""
    items = list(items)
    for item in items:
        if not isinstance(item, tuple) or len(item) != 3:
            raise ValueError("each item is a (kind, subject, body) tuple")
        if isinstance(item[0], str) and item[0].startswith(RESERVED_PREFIX):
            raise ValueError("specimen.* entries are written only by the ledger itself")
    return items


def _check_item(kind: object, subject: object, body: object) -> None:
    if not isinstance(kind, str) or not kind:
        raise ValueError("entry kind must be a non-empty string")
    if not isinstance(subject, str):
        raise ValueError("entry subject must be a string")
    if not isinstance(body, Mapping):
        raise ValueError("entry body must be a mapping")


def append_rows(
    conn: sa.Connection,
    tip: Tip,
    items: Sequence[tuple[str, str, Mapping[str, Any]]],
    recorded_at: str,
) -> tuple[list[LedgerPosition], Tip]:
    """Insert ``items`` after ``tip`` with one executemany and move the tip.

    Must run inside a write transaction that called ``lock_tip``.
    """
    from .tables import TipRow, table_of

    recorded = canonical_json(recorded_at)
    prev_hash = tip.head_hash
    prev = canonical_json(prev_hash)
    index = tip.length
    rows: list[tuple[Any, ...]] = []
    positions: list[LedgerPosition] = []
    names: dict[str, bytes] = {}
    leaves: list[bytes] = []
    for kind, subject, body in items:
        if type(kind) is not str or not kind or type(subject) is not str or type(body) is not dict:
            _check_item(kind, subject, body)  # the common case needs no more than the above
        body_bytes = body_json(body)
        kind_bytes = names.get(kind)
        if kind_bytes is None:
            kind_bytes = names[kind] = canonical_json(kind)
        subject_bytes = names.get(subject)
        if subject_bytes is None:
            subject_bytes = names[subject] = canonical_json(subject)
        data = entry_bytes(index, kind_bytes, subject_bytes, body_bytes, prev, recorded)
        entry_hash = "sha256:" + hashlib.sha256(data).hexdigest()
        leaves.append(hashlib.sha256(b"\x00" + data).digest())  # its Merkle leaf
        rows.append((index, kind, subject, body_bytes.decode(), prev_hash, entry_hash, recorded_at))
        positions.append(LedgerPosition(index=index, entry_hash=entry_hash))
        prev_hash = entry_hash
        prev = b'"' + entry_hash.encode("ascii") + b'"'  # our own hex: no escaping needed
        index += 1
    if not rows:
        return positions, tip
    _insert(conn, rows)
    extend_tree(conn, tip.length, leaves)
    new_tip = Tip(length=index, head_hash=prev_hash)
    tip_row = table_of(TipRow)
    conn.execute(
        sa.update(tip_row)
        .where(tip_row.c.id == 1)
        .values(length=new_tip.length, head_hash=new_tip.head_hash)
    )
    return positions, new_tip


def _insert(conn: sa.Connection, rows: list[tuple[Any, ...]]) -> None:
    from .tables import EntryRow, table_of

    style = conn.dialect.paramstyle
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(style)
    if mark is None:  # an unusual driver: let SQLAlchemy bind by name
        entries = table_of(EntryRow)
        conn.execute(sa.insert(entries), [dict(zip(_INSERT_COLUMNS, r, strict=True)) for r in rows])
        return
    # Kept as driver SQL on purpose: one executemany of positional tuples is the bulk
    # append's fast path (no per-row dict, no statement compilation). Fixed column
    # names and placeholders only; every value is bound.
    sql = "INSERT INTO ledger_entries ({}) VALUES ({})".format(  # noqa: S608
        ", ".join(_INSERT_COLUMNS), ", ".join([mark] * len(_INSERT_COLUMNS))
    )
    conn.exec_driver_sql(sql, rows)


def iter_entry_rows(
    conn: sa.Connection, *, batch: int = 2000, after: int = -1
) -> Iterable[tuple[Any, ...]]:
    """Every entry row after index ``after`` in index order, fetched in bounded batches
    (keyset pagination)."""
    from .tables import EntryRow, table_of

    last = after
    index = table_of(EntryRow).c.entry_index
    while True:
        query = select_entries().where(index > last).order_by(index).limit(batch)
        rows = conn.execute(query).all()
        if not rows:
            return
        yield from (tuple(row) for row in rows)
        last = int(rows[-1][0])
