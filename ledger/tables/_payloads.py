"""The database payload store's tables: ciphertext and wrapped data keys only.

The ledger's database holds them (a worker on another host shares only the database),
but nothing here can read them: the frames and the audits' inference answers are sealed
under data keys (or keys derived from them) that only a key provider unwraps. Revisions
``ledger/migrations/versions/0008_payload_store.py`` (keys, chunks) and
``0010_inference_answers.py`` (answers) create them; ``enclave.store`` writes and reads
them.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["PAYLOAD_TABLES", "InferenceAnswerRow", "PayloadChunkRow", "PayloadKeyRow"]


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


class InferenceAnswerRow(SQLModel, table=True):
    """One answer an audit obtained by governed inference, sealed under a key derived
    from the specimen's data key; ``answer_key`` is a keyed digest of what was asked."""

    __tablename__ = "inference_answers"

    tenant_id: str = Field(sa_column=sa.Column("tenant_id", sa.Text, primary_key=True))
    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, primary_key=True))
    answer_key: str = Field(sa_column=sa.Column("answer_key", sa.Text, primary_key=True))
    sealed: bytes = Field(sa_column=sa.Column("sealed", sa.LargeBinary, nullable=False))


PAYLOAD_TABLES: tuple[str, ...] = ("payload_keys", "payload_chunks", "inference_answers")
