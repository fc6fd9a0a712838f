"""The ledger's Merkle tree computed independently of ledger code: each entry's leaf
from the documented rule with the reference RFC 8785 library, and every perfect
subtree of a list of leaves, naively."""

from __future__ import annotations

import json

import rfc8785
import sqlalchemy as sa

from ledger.certificates.tlog import hash_children, hash_leaf


def independent_leaves(conn: sa.Connection) -> list[bytes]:
    rows = conn.execute(
        sa.text(
            "SELECT entry_index, kind, subject, body_json, prev_hash, recorded_at "
            "FROM ledger_entries ORDER BY entry_index"
        )
    ).all()
    return [
        hash_leaf(
            rfc8785.dumps(
                {
                    "index": index,
                    "kind": kind,
                    "subject": subject,
                    "body": json.loads(body),
                    "prev_hash": prev,
                    "recorded_at": at,
                }
            )
        )
        for index, kind, subject, body, prev, at in rows
    ]


def perfect_nodes(leaves: list[bytes]) -> dict[tuple[int, int], bytes]:
    """Every perfect subtree of ``leaves``: ``(level, index)`` to its hash."""
    nodes = {(0, i): h for i, h in enumerate(leaves)}
    level = 0
    while len(leaves) >> (level + 1):
        for i in range(len(leaves) >> (level + 1)):
            nodes[level + 1, i] = hash_children(nodes[level, 2 * i], nodes[level, 2 * i + 1])
        level += 1
    return nodes
