"""The specimen library: tags on sealed specimens (metadata only).

A tag names a specimen as a member of a release-gate library (``release-gate/procurement``,
``must-hold``). Tagging is also recorded in the ledger as ``library.tagged`` /
``library.untagged`` entries; this table is the index selectors read. The definition
mirrors ``ledger/tables/_library.py``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "library_tags",
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("tag", sa.Text, primary_key=True),
        sa.Column("tagged_at", sa.Text, nullable=False),
    )
    op.create_index("ix_library_tags_tag", "library_tags", ["tag"])


def downgrade() -> None:
    op.drop_index("ix_library_tags_tag", table_name="library_tags")
    op.drop_table("library_tags")
