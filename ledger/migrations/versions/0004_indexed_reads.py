"""Reads that do not grow with the data: filter facts as columns, keyset indexes,
verification checkpoints.

Merges the two branches (jobs 0002, governance 0003) into one head, so later revisions
have one well-defined parent.

* ``specimens`` gains the facts lists filter on (``ledger._facts``):
  ``effects_reverifiable``, ``effects_expire_at``, ``classification_rank``, filled here
  for rows sealed before this revision; and indexes for newest-first keyset pages per
  tenant and per tenant and agent.
* ``audits`` gains indexes for newest-first keyset pages per tenant (and requester).
* ``ledger_checkpoints`` records positions a verification found sound.

Revision ID: 0004
Revises: 0002, 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = ("0002", "0003")
branch_labels = None
depends_on = None

_BATCH = 2000


def upgrade() -> None:
    # plain ADD COLUMN on both backends (a SQLite table copy would trip the foreign keys
    # of steps and fields); the defaults are the strictest reading until filled below
    op.add_column(
        "specimens",
        sa.Column("effects_reverifiable", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.add_column("specimens", sa.Column("effects_expire_at", sa.Text))
    op.add_column(
        "specimens",
        sa.Column("classification_rank", sa.SmallInteger, nullable=False, server_default="3"),
    )
    _fill_specimen_facts(op.get_bind())
    op.create_index("ix_specimens_tenant_sealed", "specimens", ["tenant_id", "sealed_index"])
    op.create_index(
        "ix_specimens_tenant_agent_sealed",
        "specimens",
        ["tenant_id", "agent_name", "sealed_index"],
    )
    op.create_index("ix_audits_tenant_created", "audits", ["tenant_id", "created_at", "id"])
    op.create_index(
        "ix_audits_tenant_requester_created",
        "audits",
        ["tenant_id", "requester", "created_at", "id"],
    )
    op.create_table(
        "ledger_checkpoints",
        sa.Column("entry_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("entry_hash", sa.Text, nullable=False),
        sa.Column("verified_at", sa.Text, nullable=False),
    )


def _fill_specimen_facts(conn: sa.Connection) -> None:
    """The facts of specimens sealed before this revision, from their stored steps."""
    from ledger._facts import CLASSIFICATION_RANK, effect_facts
    from ledger._records import EffectInfo

    for name, rank in CLASSIFICATION_RANK.items():
        conn.execute(
            sa.text(
                "UPDATE specimens SET classification_rank = :r WHERE highest_classification = :c"
            ),
            {"r": rank, "c": name},
        )
    last = ""
    query = sa.text("SELECT id FROM specimens WHERE id > :last ORDER BY id LIMIT :n")
    effects_of = sa.text(
        "SELECT specimen_id, effect_token_expires_at, effect_reverifiable, "
        "effect_live_state_fields FROM steps WHERE effect_token IS NOT NULL "
        "AND specimen_id IN :ids"
    ).bindparams(sa.bindparam("ids", expanding=True))
    update = sa.text(
        "UPDATE specimens SET effects_reverifiable = :ok, effects_expire_at = :at WHERE id = :id"
    )
    while True:
        ids = [row[0] for row in conn.execute(query, {"last": last, "n": _BATCH})]
        if not ids:
            return
        effects: dict[str, list[EffectInfo]] = defaultdict(list)
        for specimen_id, expires, reverifiable, live in conn.execute(effects_of, {"ids": ids}):
            effects[specimen_id].append(
                EffectInfo(
                    idempotency_token="-",  # noqa: S106 - a placeholder, not a secret
                    token_expires_at=expires,
                    reverifiable=bool(reverifiable),
                    live_state_fields=() if live in (None, "[]") else ("-",),
                )
            )
        rows: list[dict[str, Any]] = []
        for specimen_id in ids:
            facts = effect_facts(effects.get(specimen_id, ()))
            rows.append({"ok": facts.reverifiable, "at": facts.expire_at, "id": specimen_id})
        conn.execute(update, rows)
        last = ids[-1]


def downgrade() -> None:
    op.drop_table("ledger_checkpoints")
    op.drop_index("ix_audits_tenant_requester_created", "audits")
    op.drop_index("ix_audits_tenant_created", "audits")
    op.drop_index("ix_specimens_tenant_agent_sealed", "specimens")
    op.drop_index("ix_specimens_tenant_sealed", "specimens")
    with op.batch_alter_table("specimens", recreate="never") as batch:
        batch.drop_column("classification_rank")
        batch.drop_column("effects_expire_at")
        batch.drop_column("effects_reverifiable")
