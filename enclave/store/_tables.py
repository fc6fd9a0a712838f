"""The database payload store's tables: ciphertext frames and wrapped data keys only.

Created by the Alembic revision ``ledger/migrations/versions/0008_payload_store.py``;
these definitions mirror it (a test compares them).
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["PAYLOAD_METADATA", "payload_chunks", "payload_keys"]

PAYLOAD_METADATA = sa.MetaData()

payload_keys = sa.Table(
    "payload_keys",
    PAYLOAD_METADATA,
    sa.Column("tenant_id", sa.Text, primary_key=True),
    sa.Column("specimen_id", sa.Text, primary_key=True),
    sa.Column("wrapped_key", sa.Text, nullable=False),
)

payload_chunks = sa.Table(
    "payload_chunks",
    PAYLOAD_METADATA,
    sa.Column("tenant_id", sa.Text, primary_key=True),
    sa.Column("specimen_id", sa.Text, primary_key=True),
    sa.Column("chunk_no", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("frames", sa.LargeBinary, nullable=False),
)
