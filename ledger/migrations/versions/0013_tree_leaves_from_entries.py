"""The Merkle tree's leaves and pairs are read from their entries: ``ledger_tree`` keeps
subtrees of level 2 and above only, and the level-0 and level-1 rows written before are
removed (each a leaf, SHA-256(0x00 ‖ its entry's canonical bytes), or the hash of two,
which the entries still give).

Revision ID: 0013_tree_leaves_from_entries
Revises: 0012_signed_checkpoints
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0013_tree_leaves_from_entries"
down_revision = "0012_signed_checkpoints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM ledger_tree WHERE level < 2")


def downgrade() -> None:
    # the leaves and pairs are derivable, not lost: write them back from the entries, in
    # batches of an even size (a pair never spans two)
    import hashlib

    import sqlalchemy as sa

    from ledger._chain import stored_entry_bytes

    conn = op.get_bind()
    last = -1
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT entry_index, kind, subject, body_json, prev_hash, recorded_at "
                "FROM ledger_entries WHERE entry_index > :last ORDER BY entry_index LIMIT 2000"
            ),
            {"last": last},
        ).all()
        if not rows:
            return
        leaves = [
            (
                int(row[0]),
                hashlib.sha256(b"\x00" + stored_entry_bytes(int(row[0]), *row[1:])).digest(),
            )
            for row in rows
        ]
        pairs = [
            (left[0] >> 1, hashlib.sha256(b"\x01" + left[1] + right[1]).digest())
            for left, right in zip(leaves[::2], leaves[1::2], strict=False)
            if right[0] == left[0] + 1 and left[0] % 2 == 0
        ]
        conn.execute(
            sa.text("INSERT INTO ledger_tree (level, node_index, hash) VALUES (:l, :i, :h)"),
            [{"l": 0, "i": i, "h": h} for i, h in leaves]
            + [{"l": 1, "i": i, "h": h} for i, h in pairs],
        )
        last = int(rows[-1][0])
