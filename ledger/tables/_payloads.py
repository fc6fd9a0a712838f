"""The database payload store's tables: ciphertext frames and wrapped data keys only.

The ledger's database holds them (a worker on another host shares only the database),
but nothing here can read them: the frames are sealed under data keys that only a key
provider unwraps. Revision ``ledger/migrations/versions/0008_payload_store.py`` creates
them; ``enclave.store`` writes and reads them.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["PAYLOAD_TABLES", "PayloadChunkRow", "PayloadKeyRow"]


class PayloadKeyRow(SQLModel, table=True):
    """A specimen's data key, wrapped by the tenant's key provider."""

    __tablename__ = "payload_keys"

    tenant_id: str = Field(sa_column=sa.Column("tenant_id", sa.Text, primary_key=True))
    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, primary_key=True))
    wrapped_key: str = Field(sa_column=sa.Column("wrapped_key", sa.Text, nullable=False))


class PayloadChunkRow(SQLModel, table=True):
    """One chunk of a specimen's sealed frames, in order of ``chunk_no``."""

    __tablename__ = "payload_chunks"

    tenant_id: str = Field(sa_column=sa.Column("tenant_id", sa.Text, primary_key=True))
    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, primary_key=True))
    chunk_no: int = Field(
        sa_column=sa.Column("chunk_no", sa.Integer, primary_key=True, autoincrement=False)
    )
    frames: bytes = Field(sa_column=sa.Column("frames", sa.LargeBinary, nullable=False))


PAYLOAD_TABLES: tuple[str, ...] = ("payload_keys", "payload_chunks")
