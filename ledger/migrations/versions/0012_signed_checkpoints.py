"""The checkpoints the log signed: ``ledger_signed_checkpoints``, one row per tree size.

Each row is the tree's size and root and the C2SP signed note as issued (``ledger
checkpoint``); a new one is signed only after a consistency proof from the latest one
verified. The definition mirrors ``ledger/tables/_chain.py``.

Revision ID: 0012_signed_checkpoints
Revises: 0011_merkle_tree
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_signed_checkpoints"
down_revision = "0011_merkle_tree"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ledger_signed_checkpoints",
        sa.Column("tree_size", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("root", sa.LargeBinary, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("signed_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ledger_signed_checkpoints")
