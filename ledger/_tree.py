"""The ledger's RFC 9162 Merkle tree, kept beside the chain in ``ledger_tree``.

Each row is a perfect subtree (``ledger.certificates.tlog``) of level
:data:`STORED_FROM` (2) or more: ``(level, node_index)`` and its 32-byte hash. The
subtrees below (a leaf, SHA-256(0x00 ‖ its entry's canonical bytes), and a pair of
leaves) are not stored: they are computed from their entries' rows in
``ledger_entries`` when a proof or the frontier needs them (at most three entries a
proof), so an append writes about one tree row per two entries beside the entries
themselves. An append adds every stored subtree its leaves complete, in the appending
transaction, after reading the *frontier* — the perfect subtrees the tree of the old
size is made of, at most one per level. So a tree of ``n`` entries has fewer than
``n / 2`` rows, and a root, an inclusion proof or a consistency proof at any size up to
``n`` is one read of at most a few dozen rows by primary key (and of at most three
entries), whatever ``n`` is.

Nothing here updates or deletes a row; ``ledger._verify`` recomputes the tree from the
entries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from .certificates.tlog import (
    Node,
    consistency_ranges,
    hash_leaf,
    inclusion_ranges,
    proof_hashes,
    range_nodes,
    range_root,
    root_of_leaves,
)

__all__ = [
    "Frontier",
    "beyond",
    "consistency_proof",
    "extend_tree",
    "first_differing",
    "inclusion_proof",
    "read_nodes",
    "tree_root",
]


def _table() -> sa.Table:
    from .tables import TreeNodeRow, table_of

    return table_of(TreeNodeRow)


_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}
# the lowest level stored: subtrees below it (a leaf, a pair) are computed from their
# entries when read, so an append writes about one tree row per two entries
STORED_FROM = 2


def _stored(conn: sa.Connection, nodes: Iterable[Node]) -> dict[Node, bytes]:
    """The hashes of ``nodes`` that exist: those below :data:`STORED_FROM` from their
    entries, the others from their rows, asked level by level (a run of indexes as one
    range) so that every database answers from the primary key: SQLite scans the whole
    table for a row-value ``IN``."""
    by_level: dict[int, list[int]] = {}
    for level, index in nodes:
        by_level.setdefault(level, []).append(index)
    low = [(level, index) for level in range(STORED_FROM) for index in by_level.pop(level, ())]
    found = _from_entries(conn, low)
    if not by_level:
        return found
    mark = _MARKS.get(conn.dialect.paramstyle)
    rows = _driver_read(conn, by_level, mark) if mark else _bound_read(conn, by_level)
    for level, index, digest in rows:
        found[int(level), int(index)] = bytes(digest)
    return found


def _from_entries(conn: sa.Connection, nodes: list[Node]) -> dict[Node, bytes]:
    """The hashes of the small subtrees ``nodes`` (level below :data:`STORED_FROM`)
    whose entries all exist, computed from the entries' rows."""
    # here, not at the top: the chain's append imports this module
    from ._chain import stored_entry_bytes
    from ._statements import select_entries
    from .tables import EntryRow, table_of

    if not nodes:
        return {}
    spans = {(level, index): _span(level, index) for level, index in nodes}
    wanted = sorted({i for span in spans.values() for i in span})
    column = table_of(EntryRow).c.entry_index
    rows = conn.execute(select_entries().where(column.in_(wanted))).all()
    leaves = {
        int(i): hash_leaf(stored_entry_bytes(int(i), kind, subject, body, prev, at))
        for i, kind, subject, body, prev, _, at in rows
    }
    return {
        node: root_of_leaves([leaves[i] for i in span])
        for node, span in spans.items()
        if all(i in leaves for i in span)
    }


def _span(level: int, index: int) -> range:
    """The entries a perfect subtree covers."""
    return range(index << level, (index + 1) << level)


def _driver_read(conn: sa.Connection, by_level: dict[int, list[int]], mark: str) -> Any:
    # Kept as driver SQL: building the equivalent SQLAlchemy expression costs more than
    # the read itself. Fixed column names and placeholders only; every value is bound.
    terms: list[str] = []
    params: list[int] = []
    for level, indexes in sorted(by_level.items()):
        low, high = min(indexes), max(indexes)
        if high - low + 1 == len(set(indexes)):
            terms.append(f"(level = {mark} AND node_index BETWEEN {mark} AND {mark})")
            params += [level, low, high]
        else:
            for index in sorted(set(indexes)):
                terms.append(f"(level = {mark} AND node_index = {mark})")
                params += [level, index]
    sql = "SELECT level, node_index, hash FROM ledger_tree WHERE " + " OR ".join(terms)  # noqa: S608
    return conn.exec_driver_sql(sql, tuple(params)).all()


def _bound_read(conn: sa.Connection, by_level: dict[int, list[int]]) -> Any:
    # an unusual driver: let SQLAlchemy bind by name
    tree = _table()
    terms = [
        sa.and_(tree.c.level == level, tree.c.node_index.in_(indexes))
        for level, indexes in by_level.items()
    ]
    return conn.execute(
        sa.select(tree.c.level, tree.c.node_index, tree.c.hash).where(sa.or_(*terms))
    ).all()


def read_nodes(conn: sa.Connection, wanted: Iterable[Node]) -> dict[Node, bytes]:
    """The stored hashes of ``wanted`` perfect subtrees; ``LookupError`` if one is
    missing (a tree that does not cover the entries it should)."""
    wanted = set(wanted)
    if not wanted:
        return {}
    found = _stored(conn, wanted)
    if len(found) != len(wanted):
        raise LookupError("the Merkle tree lacks a node the ledger's size implies")
    return found


class Frontier:
    """The right edge of a tree being grown one leaf at a time: the perfect subtrees its
    current size is made of, largest first. ``push`` returns every subtree a leaf
    completes that is stored (of level :data:`STORED_FROM` and above)."""

    def __init__(self, size: int, known: Mapping[Node, bytes]) -> None:
        self.size = size
        self._stack = [(level, index, known[level, index]) for level, index in range_nodes(0, size)]

    @classmethod
    def stored(cls, conn: sa.Connection, size: int) -> Frontier:
        return cls(size, read_nodes(conn, range_nodes(0, size)))

    def push(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        added: list[tuple[int, int, bytes]] = []
        self.extend((leaf,), added)
        return added

    def extend(self, leaves: Iterable[bytes], added: list[tuple[int, int, bytes]]) -> None:
        """Push each of ``leaves``, appending to ``added`` every subtree it completes
        (the append's hot loop: one SHA-256 per subtree, nothing else)."""
        stack, size, sha256 = self._stack, self.size, hashlib.sha256
        for leaf in leaves:
            level, index, digest = 0, size, leaf
            # equal levels at the top: the right one completes its parent
            while stack and stack[-1][0] == level:
                digest = sha256(b"\x01" + stack.pop()[2] + digest).digest()
                level, index = level + 1, index >> 1
                if level >= STORED_FROM:
                    added.append((level, index, digest))
            stack.append((level, index, digest))
            size += 1
        self.size = size


def extend_tree(conn: sa.Connection, size: int, leaves: Sequence[bytes]) -> None:
    """Add ``leaves`` (entries ``size``, ``size + 1``, ...) and the subtrees they
    complete. Runs in the append's transaction, which holds the tip's lock."""
    if not leaves:
        return
    new: list[tuple[int, int, bytes]] = []
    Frontier.stored(conn, size).extend(leaves, new)
    if not new:
        return
    mark = _MARKS.get(conn.dialect.paramstyle)
    if mark is None:  # an unusual driver: let SQLAlchemy bind by name
        rows = [{"level": lv, "node_index": ix, "hash": h} for lv, ix, h in new]
        conn.execute(sa.insert(_table()), rows)
        return
    # one executemany of positional tuples, as the entries' own insert (``ledger._chain``)
    conn.exec_driver_sql(
        f"INSERT INTO ledger_tree (level, node_index, hash) VALUES ({mark}, {mark}, {mark})",  # noqa: S608
        new,
    )


def first_differing(conn: sa.Connection, nodes: Sequence[tuple[int, int, bytes]]) -> Node | None:
    """The first of ``nodes`` (recomputed subtrees of a stored level) whose stored row
    is missing or differs."""
    stored = _stored(conn, [(level, index) for level, index, _ in nodes]) if nodes else {}
    for level, index, digest in nodes:
        if stored.get((level, index)) != digest:
            return (level, index)
    return None


def beyond(conn: sa.Connection, size: int) -> Node | None:
    """A stored subtree that reaches past entry ``size - 1``, if there is one."""
    tree = _table()
    rows = conn.execute(
        sa.select(tree.c.level, sa.func.max(tree.c.node_index)).group_by(tree.c.level)
    ).all()
    for level, last in sorted(rows):
        if (int(last) + 1) << int(level) > size:
            return (int(level), int(last))
    return None


def _reader(conn: sa.Connection) -> Callable[[set[Node]], Mapping[Node, bytes]]:
    return lambda wanted: read_nodes(conn, wanted)


def tree_root(conn: sa.Connection, size: int) -> bytes:
    """The root of the tree of the first ``size`` entries (RFC 9162 ``MTH``)."""
    if size == 0:
        return root_of_leaves([])
    nodes = range_nodes(0, size)
    return range_root(nodes, read_nodes(conn, nodes))


def inclusion_proof(conn: sa.Connection, index: int, size: int) -> list[bytes]:
    """The audit path of entry ``index`` in the tree of ``size`` entries."""
    return proof_hashes(inclusion_ranges(index, size), _reader(conn))


def consistency_proof(conn: sa.Connection, old: int, new: int) -> list[bytes]:
    """The proof that the tree of ``old`` entries is a prefix of the one of ``new``."""
    if old == new:
        return []
    return proof_hashes(consistency_ranges(old, new), _reader(conn))
