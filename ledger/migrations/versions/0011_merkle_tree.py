"""The ledger's RFC 9162 Merkle tree: ``ledger_tree``, one row per perfect subtree.

Level 0 holds each entry's leaf hash, SHA-256(0x00 ‖ the entry's canonical bytes); a
row at level ``l`` is the hash of entries ``[i * 2**l, (i + 1) * 2**l)``. Appends add
their rows in the appending transaction (``ledger._tree``). This revision builds the
tree of the entries already there, in index order, in bounded batches. The definition
mirrors ``ledger/tables/_chain.py``.

Revision ID: 0011_merkle_tree
Revises: 0010_inference_answers
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_merkle_tree"
down_revision = "0010_inference_answers"
branch_labels = None
depends_on = None

_BATCH = 5000


def upgrade() -> None:
    op.create_table(
        "ledger_tree",
        sa.Column("level", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("node_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
        sa.CheckConstraint("level >= 0 AND level < 64", name="ck_ledger_tree_level"),
        sqlite_with_rowid=False,
    )
    # the entries already there: the hash rule is the chain's (frozen by its docs)
    from ledger._chain import iter_entry_rows, stored_entry_bytes
    from ledger._tree import extend_tree
    from ledger.certificates.tlog import hash_leaf

    conn = op.get_bind()
    size = 0
    leaves: list[bytes] = []
    for index, kind, subject, body_json, prev_hash, _hash, recorded_at in iter_entry_rows(conn):
        leaves.append(
            hash_leaf(stored_entry_bytes(index, kind, subject, body_json, prev_hash, recorded_at))
        )
        if len(leaves) == _BATCH:
            extend_tree(conn, size, leaves)
            size, leaves = size + len(leaves), []
    extend_tree(conn, size, leaves)


def downgrade() -> None:
    op.drop_table("ledger_tree")
