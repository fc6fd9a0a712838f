"""The audits' sealed inference answers in the database payload store (ciphertext only).

A home whose payloads live in the database (``[payloads] store = "database"``) keeps each
answer an audit obtained by governed inference as one row of ``inference_answers``,
beside the specimen's key and chunk rows, so a batch on another host sharing the
database serves and keeps the same answers. ``answer_key`` is a keyed digest of what was
asked (64 hex characters); ``sealed`` is the answer, AES-256-GCM under a key derived from
the specimen's data key. Erasing a specimen deletes its answer rows in the transaction
that deletes its key and chunk rows. On PostgreSQL the blobs are stored uncompressed, as
the chunks are (ciphertext does not compress). The definitions mirror
``ledger/tables/_payloads.py``.

Revision ID: 0010_inference_answers
Revises: 0009_documents
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_inference_answers"
down_revision = "0009_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inference_answers",
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("specimen_id", sa.Text, primary_key=True),
        sa.Column("answer_key", sa.Text, primary_key=True),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
    )
    if op.get_context().dialect.name == "postgresql":
        # as payload_chunks.frames (0008): no compression attempt on ciphertext
        op.execute("ALTER TABLE inference_answers ALTER COLUMN sealed SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("inference_answers")
