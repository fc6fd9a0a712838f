"""Typed, frozen records that cross into the ledger. Metadata only: identities,
digests, order, times, classifications and payload *references* — never payload bytes.
Every field here is safe to show an analyst.

``Classification`` and ``SpecimenSummary`` are defined in ``_summary_record`` (a
specimen listing needs only those two) and are re-exported here."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from ._summary_record import Classification, SpecimenSummary

__all__ = [
    "AdapterInfo",
    "Classification",
    "EffectInfo",
    "EntryRecord",
    "FieldRecord",
    "LedgerPosition",
    "Retention",
    "RunStatus",
    "SpecimenRecord",
    "SpecimenSummary",
    "StepKind",
    "StepRecord",
    "VerifyReport",
]


class Retention(StrEnum):
    ENCRYPTED = "encrypted"  # ciphertext in the payload store + keyed digest
    DIGEST_ONLY = "digest"  # keyed digest only: equality is enough
    WITHHELD = "withheld"  # an honest hole: neither content nor digest


class StepKind(StrEnum):
    CONTEXT = "context"  # context assembly (template revision)
    RETRIEVAL = "retrieval"
    MODEL = "model"
    TOOL = "tool"
    AUTHORITY = "authority"  # policy decision
    EFFECT = "effect"  # effect request -> receipt
    READBACK = "readback"
    MESSAGE = "message"  # between agents of one trajectory
    CLOCK = "clock"  # the time the agent asked for
    RANDOM = "random"  # the seed the agent drew randomness from
    INPUT = "input"  # what the run was started with
    OUTCOME = "outcome"  # the artifact the decision is judged by
    CUT = "cut"  # a declared checkpoint: the state the work before it produced
    AMBIENT = "ambient"  # read outside ctx: environment, data file, clock, global random, ids


class RunStatus(StrEnum):
    RUNNING = "running"
    INCOMPLETE = "incomplete"  # crashed before sealing: never eligible for replay
    SEALED = "sealed"


class FieldRecord(NamedTuple):
    """One leaf of a step's request or response.

    Field and step records are named tuples, not frozen dataclasses: capture builds
    several for every boundary crossing, and a frozen dataclass pays one
    ``object.__setattr__`` per attribute. ``check`` holds the invariants; the ledger
    applies it to every field it seals or loads.
    """

    seq: int
    side: str  # "request" | "response"
    path: str  # JSON-pointer-like path, e.g. "/documents/0/text"
    classification: Classification
    retention: Retention
    keyed_digest: str | None  # "hmac-sha256:<hex>", None when withheld
    payload_ref: str | None  # relative reference into the payload store, or None
    live_state: bool = False

    def check(self) -> FieldRecord:
        """This record, or ``ValueError`` if its retention and contents disagree."""
        if self.side not in ("request", "response"):
            raise ValueError("side must be 'request' or 'response'")
        if self.retention is Retention.WITHHELD and (self.keyed_digest or self.payload_ref):
            raise ValueError("a withheld field carries neither digest nor reference")
        if self.retention is Retention.DIGEST_ONLY and self.payload_ref:
            raise ValueError("a digest-only field has no payload reference")
        if self.retention is Retention.ENCRYPTED and not (self.keyed_digest and self.payload_ref):
            raise ValueError("an encrypted field needs a digest and a reference")
        return self


@dataclass(frozen=True, slots=True)
class EffectInfo:
    idempotency_token: str
    token_expires_at: str | None  # ISO-8601 UTC, None = does not expire
    reverifiable: bool
    live_state_fields: tuple[str, ...] = ()


class StepRecord(NamedTuple):
    seq: int
    agent: str
    call_id: str
    kind: StepKind
    name: str
    alias: str | None
    resolved: str | None
    schema_id: str | None
    schema_version: str | None
    request_digest: str  # keyed digest of the canonical request
    response_digest: str  # keyed digest of the canonical response
    valid_time: str  # ISO-8601 UTC: when the fact was true in the world
    observed_time: str  # ISO-8601 UTC: when capture saw it
    effect: EffectInfo | None = None


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    name: str
    version: str
    strategies: tuple[str, ...]
    source_ref: str  # frozen source reference (module path + code digest)


@dataclass(frozen=True, slots=True)
class SpecimenRecord:
    """A sealed specimen as the ledger stores it."""

    specimen_id: str
    tenant_id: str
    agent_name: str
    agent_version: str
    manifest: dict[str, Any]  # canonicalisable metadata: identities, digests, order
    manifest_digest: str  # "sha256:<hex>" of canonical_json(manifest)
    adapter: AdapterInfo
    highest_classification: Classification
    retention_class: str
    sealed_at: str
    steps: tuple[StepRecord, ...]
    fields: tuple[FieldRecord, ...]
    legal_hold: bool = False
    # set with the ``specimen.erased`` entry, in its transaction (``Ledger.mark_erased``)
    erased: bool = False


@dataclass(frozen=True, slots=True)
class LedgerPosition:
    index: int
    entry_hash: str


@dataclass(frozen=True, slots=True)
class EntryRecord:
    index: int
    kind: str
    subject: str
    body: dict[str, Any]
    prev_hash: str
    entry_hash: str
    recorded_at: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    length: int
    head: LedgerPosition | None
    first_bad_index: int | None = None
    reason: str | None = None
    checked: tuple[str, ...] = field(default_factory=tuple)
    verified_from: int = 0  # the first index checked: 0, or one past a trusted checkpoint
