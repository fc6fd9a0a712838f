"""The encrypted payload store in the ledger's database (ciphertext and wrapped keys only).

A home whose payloads live in the database (``[payloads] store = "database"``) keeps each
specimen's wrapped data key in ``payload_keys`` and its frames, in order, in
``payload_chunks``: one row per ~1 MiB of frames, the last one ending with the sealed
``#end`` frame. The rows hold exactly the bytes of the file store's ``payloads.ct``.
Erasing a specimen deletes its key row and its chunk rows in one transaction. On
PostgreSQL the chunks are stored uncompressed (ciphertext does not compress). The
definitions mirror ``ledger/tables/_payloads.py``.

Revision ID: 0008_payload_store
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_payload_store"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "payload_keys",
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("wrapped_key", sa.Text, nullable=False),
    )
    op.create_table(
        "payload_chunks",
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("chunk_no", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("frames", sa.LargeBinary, nullable=False),
    )
    if op.get_context().dialect.name == "postgresql":
        # Ciphertext does not compress, but its frame headers make PostgreSQL's pglz try
        # over the whole chunk: that attempt took longer than the insert itself (38 ms
        # against 12 ms per 1 MiB chunk). EXTERNAL stores the value out of line as it is.
        op.execute("ALTER TABLE payload_chunks ALTER COLUMN frames SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("payload_chunks")
    op.drop_table("payload_keys")
