"""The chain's tables: tenants, runs, sealed specimens with their steps and fields, the
hash-linked entries, the tip and verification checkpoints. Metadata only: never a
payload byte. Revisions ``0001`` and ``0004`` create them.

Times are ISO-8601 UTC text exactly as recorded (they are hashed as text). JSON
columns hold canonical JSON text (``ledger._canonical.canonical_json``).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = [
    "TenantRow",
    "RunRow",
    "SpecimenRow",
    "StepRow",
    "FieldRowModel",
    "EntryRow",
    "TipRow",
    "CheckpointRow",
    "TreeNodeRow",
    "SignedCheckpointRow",
    "LEDGER_TABLES",
]

_CLASSIFICATIONS = "('public', 'internal', 'confidential', 'restricted')"


class TenantRow(SQLModel, table=True):
    __tablename__ = "tenants"

    id: str = Field(sa_column=sa.Column("id", sa.Text, primary_key=True))


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    __table_args__ = (
        sa.CheckConstraint("status IN ('running', 'incomplete', 'sealed')", name="ck_runs_status"),
    )

    id: str = Field(sa_column=sa.Column("id", sa.Text, primary_key=True))
    tenant_id: str = Field(
        sa_column=sa.Column(
            "tenant_id",
            sa.Text,
            sa.ForeignKey("tenants.id", name="fk_runs_tenant"),
            nullable=False,
            index=True,
        )
    )
    agent_name: str = Field(sa_column=sa.Column("agent_name", sa.Text, nullable=False))
    agent_version: str = Field(sa_column=sa.Column("agent_version", sa.Text, nullable=False))
    status: str = Field(sa_column=sa.Column("status", sa.Text, nullable=False))
    started_at: str = Field(sa_column=sa.Column("started_at", sa.Text, nullable=False))
    ended_at: str | None = Field(default=None, sa_column=sa.Column("ended_at", sa.Text))
    failure_code: str | None = Field(default=None, sa_column=sa.Column("failure_code", sa.Text))


class SpecimenRow(SQLModel, table=True):
    """A sealed run. ``id`` is the run id; ``sealed_index`` its ``specimen.sealed`` entry."""

    __tablename__ = "specimens"
    __table_args__ = (
        sa.CheckConstraint(
            f"highest_classification IN {_CLASSIFICATIONS}",
            name="ck_specimens_classification",
        ),
        sa.UniqueConstraint("sealed_index", name="uq_specimens_sealed_index"),
        # keyset pages, newest seal first, per tenant and per tenant and agent
        sa.Index("ix_specimens_tenant_sealed", "tenant_id", "sealed_index"),
        sa.Index("ix_specimens_tenant_agent_sealed", "tenant_id", "agent_name", "sealed_index"),
        # counts of filtered listings read these index entries, never the rows
        sa.Index(
            "ix_specimens_tenant_facts", "tenant_id", "effects_reverifiable", "effects_expire_at"
        ),
        sa.Index(
            "ix_specimens_tenant_agent_facts",
            "tenant_id",
            "agent_name",
            "effects_reverifiable",
            "effects_expire_at",
        ),
    )

    id: str = Field(
        sa_column=sa.Column(
            "id", sa.Text, sa.ForeignKey("runs.id", name="fk_specimens_run"), primary_key=True
        )
    )
    tenant_id: str = Field(
        sa_column=sa.Column(
            "tenant_id",
            sa.Text,
            sa.ForeignKey("tenants.id", name="fk_specimens_tenant"),
            nullable=False,
            index=True,
        )
    )
    agent_name: str = Field(sa_column=sa.Column("agent_name", sa.Text, nullable=False, index=True))
    agent_version: str = Field(sa_column=sa.Column("agent_version", sa.Text, nullable=False))
    manifest_json: str = Field(sa_column=sa.Column("manifest_json", sa.Text, nullable=False))
    manifest_digest: str = Field(sa_column=sa.Column("manifest_digest", sa.Text, nullable=False))
    adapter_name: str = Field(sa_column=sa.Column("adapter_name", sa.Text, nullable=False))
    adapter_version: str = Field(sa_column=sa.Column("adapter_version", sa.Text, nullable=False))
    adapter_strategies: str = Field(
        sa_column=sa.Column("adapter_strategies", sa.Text, nullable=False)
    )
    adapter_source_ref: str = Field(
        sa_column=sa.Column("adapter_source_ref", sa.Text, nullable=False)
    )
    highest_classification: str = Field(
        sa_column=sa.Column("highest_classification", sa.Text, nullable=False)
    )
    retention_class: str = Field(sa_column=sa.Column("retention_class", sa.Text, nullable=False))
    legal_hold: bool = Field(sa_column=sa.Column("legal_hold", sa.Boolean, nullable=False))
    sealed_at: str = Field(sa_column=sa.Column("sealed_at", sa.Text, nullable=False))
    sealed_index: int = Field(sa_column=sa.Column("sealed_index", sa.BigInteger, nullable=False))
    erased: bool = Field(sa_column=sa.Column("erased", sa.Boolean, nullable=False))
    erased_at: str | None = Field(default=None, sa_column=sa.Column("erased_at", sa.Text))
    # filter facts written at seal (``ledger._facts``), so lists filter in SQL
    effects_reverifiable: bool = Field(
        sa_column=sa.Column("effects_reverifiable", sa.Boolean, nullable=False)
    )
    effects_expire_at: str | None = Field(
        default=None, sa_column=sa.Column("effects_expire_at", sa.Text)
    )
    classification_rank: int = Field(
        sa_column=sa.Column("classification_rank", sa.SmallInteger, nullable=False)
    )


class StepRow(SQLModel, table=True):
    """One ``StepRecord``; ``ordinal`` keeps the sealed order, ``seq`` is unique per run."""

    __tablename__ = "steps"
    __table_args__ = (sa.UniqueConstraint("specimen_id", "seq", name="uq_steps_seq"),)

    specimen_id: str = Field(
        sa_column=sa.Column(
            "specimen_id",
            sa.Text,
            sa.ForeignKey("specimens.id", name="fk_steps_specimen"),
            primary_key=True,
        )
    )
    ordinal: int = Field(sa_column=sa.Column("ordinal", sa.Integer, primary_key=True))
    seq: int = Field(sa_column=sa.Column("seq", sa.Integer, nullable=False))
    agent: str = Field(sa_column=sa.Column("agent", sa.Text, nullable=False))
    call_id: str = Field(sa_column=sa.Column("call_id", sa.Text, nullable=False))
    kind: str = Field(sa_column=sa.Column("kind", sa.Text, nullable=False))
    name: str = Field(sa_column=sa.Column("name", sa.Text, nullable=False))
    alias: str | None = Field(default=None, sa_column=sa.Column("alias", sa.Text))
    resolved: str | None = Field(default=None, sa_column=sa.Column("resolved", sa.Text))
    schema_id: str | None = Field(default=None, sa_column=sa.Column("schema_id", sa.Text))
    schema_version: str | None = Field(default=None, sa_column=sa.Column("schema_version", sa.Text))
    request_digest: str = Field(sa_column=sa.Column("request_digest", sa.Text, nullable=False))
    response_digest: str = Field(sa_column=sa.Column("response_digest", sa.Text, nullable=False))
    valid_time: str = Field(sa_column=sa.Column("valid_time", sa.Text, nullable=False))
    observed_time: str = Field(sa_column=sa.Column("observed_time", sa.Text, nullable=False))
    # effect info: all NULL when the step has no effect
    effect_token: str | None = Field(default=None, sa_column=sa.Column("effect_token", sa.Text))
    effect_token_expires_at: str | None = Field(
        default=None, sa_column=sa.Column("effect_token_expires_at", sa.Text)
    )
    effect_reverifiable: bool | None = Field(
        default=None, sa_column=sa.Column("effect_reverifiable", sa.Boolean)
    )
    effect_live_state_fields: str | None = Field(
        default=None, sa_column=sa.Column("effect_live_state_fields", sa.Text)
    )


class FieldRowModel(SQLModel, table=True):
    """One ``FieldRecord`` (a leaf of a step's request or response)."""

    __tablename__ = "fields"
    __table_args__ = (
        sa.UniqueConstraint("specimen_id", "seq", "side", "path", name="uq_fields_leaf"),
        sa.ForeignKeyConstraint(
            ["specimen_id", "seq"],
            ["steps.specimen_id", "steps.seq"],
            name="fk_fields_step",
        ),
        sa.CheckConstraint("side IN ('request', 'response')", name="ck_fields_side"),
        sa.CheckConstraint(f"classification IN {_CLASSIFICATIONS}", name="ck_fields_class"),
        sa.CheckConstraint(
            "retention IN ('encrypted', 'digest', 'withheld')", name="ck_fields_retention"
        ),
    )

    specimen_id: str = Field(sa_column=sa.Column("specimen_id", sa.Text, primary_key=True))
    ordinal: int = Field(sa_column=sa.Column("ordinal", sa.Integer, primary_key=True))
    seq: int = Field(sa_column=sa.Column("seq", sa.Integer, nullable=False))
    side: str = Field(sa_column=sa.Column("side", sa.Text, nullable=False))
    path: str = Field(sa_column=sa.Column("path", sa.Text, nullable=False))
    classification: str = Field(sa_column=sa.Column("classification", sa.Text, nullable=False))
    retention: str = Field(sa_column=sa.Column("retention", sa.Text, nullable=False))
    keyed_digest: str | None = Field(default=None, sa_column=sa.Column("keyed_digest", sa.Text))
    payload_ref: str | None = Field(default=None, sa_column=sa.Column("payload_ref", sa.Text))
    live_state: bool = Field(sa_column=sa.Column("live_state", sa.Boolean, nullable=False))


class EntryRow(SQLModel, table=True):
    """One hash-linked ledger entry. Append-only; see ``ledger._chain`` for the hash rule."""

    __tablename__ = "ledger_entries"
    __table_args__ = (sa.UniqueConstraint("entry_hash", name="uq_ledger_entries_hash"),)

    entry_index: int = Field(
        sa_column=sa.Column("entry_index", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    kind: str = Field(sa_column=sa.Column("kind", sa.Text, nullable=False, index=True))
    subject: str = Field(sa_column=sa.Column("subject", sa.Text, nullable=False, index=True))
    body_json: str = Field(sa_column=sa.Column("body_json", sa.Text, nullable=False))
    prev_hash: str = Field(sa_column=sa.Column("prev_hash", sa.Text, nullable=False))
    entry_hash: str = Field(sa_column=sa.Column("entry_hash", sa.Text, nullable=False))
    recorded_at: str = Field(sa_column=sa.Column("recorded_at", sa.Text, nullable=False))


class TipRow(SQLModel, table=True):
    """Exactly one row: the chain's length and head hash. Appends lock it to serialise."""

    __tablename__ = "ledger_tip"
    __table_args__ = (sa.CheckConstraint("id = 1", name="ck_ledger_tip_single"),)

    id: int = Field(sa_column=sa.Column("id", sa.Integer, primary_key=True, autoincrement=False))
    length: int = Field(sa_column=sa.Column("length", sa.BigInteger, nullable=False))
    head_hash: str = Field(sa_column=sa.Column("head_hash", sa.Text, nullable=False))


class CheckpointRow(SQLModel, table=True):
    """A position a full or incremental verification found sound (``ledger._verify``).

    The next verification starts here instead of at entry 0, after checking that this
    entry still hashes to ``entry_hash``; ``--full`` ignores checkpoints altogether."""

    __tablename__ = "ledger_checkpoints"

    entry_index: int = Field(
        sa_column=sa.Column("entry_index", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    entry_hash: str = Field(sa_column=sa.Column("entry_hash", sa.Text, nullable=False))
    verified_at: str = Field(sa_column=sa.Column("verified_at", sa.Text, nullable=False))


class TreeNodeRow(SQLModel, table=True):
    """A perfect subtree of the ledger's RFC 9162 Merkle tree (``ledger._tree``): the
    hash of entries ``[node_index * 2**level, (node_index + 1) * 2**level)``; level 0
    holds the entries' leaf hashes. Append-only, written with the entries."""

    __tablename__ = "ledger_tree"
    __table_args__ = (
        sa.CheckConstraint("level >= 0 AND level < 64", name="ck_ledger_tree_level"),
        {"sqlite_with_rowid": False},
    )

    level: int = Field(
        sa_column=sa.Column("level", sa.SmallInteger, primary_key=True, autoincrement=False)
    )
    node_index: int = Field(
        sa_column=sa.Column("node_index", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    hash: bytes = Field(sa_column=sa.Column("hash", sa.LargeBinary, nullable=False))


class SignedCheckpointRow(SQLModel, table=True):
    """A checkpoint the log signed (``ledger._signed``): the tree's size and root, and the
    C2SP signed note as issued. Each was proven consistent with the one before it."""

    __tablename__ = "ledger_signed_checkpoints"

    tree_size: int = Field(
        sa_column=sa.Column("tree_size", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    root: bytes = Field(sa_column=sa.Column("root", sa.LargeBinary, nullable=False))
    note: str = Field(sa_column=sa.Column("note", sa.Text, nullable=False))
    signed_at: str = Field(sa_column=sa.Column("signed_at", sa.Text, nullable=False))


LEDGER_TABLES: tuple[str, ...] = (
    "tenants",
    "runs",
    "specimens",
    "steps",
    "fields",
    "ledger_entries",
    "ledger_tip",
    "ledger_checkpoints",
    "ledger_tree",
    "ledger_signed_checkpoints",
)
