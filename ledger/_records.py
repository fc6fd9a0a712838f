"""Typed, frozen records that cross into the ledger. Metadata only: identities,
digests, order, times, classifications and payload *references* — never payload bytes.
Every field here is safe to show an analyst."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class Classification(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"

    @property
    def rank(self) -> int:
        return list(Classification).index(self)


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


@dataclass(frozen=True, slots=True)
class SpecimenSummary:
    """One line of a specimen listing: identities and status, no manifest content."""

    specimen_id: str
    tenant_id: str
    agent_name: str
    agent_version: str
    manifest_digest: str
    highest_classification: Classification
    sealed_at: str
    step_count: int
    erased: bool
    legal_hold: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen_id": self.specimen_id,
            "tenant_id": self.tenant_id,
            "agent_name": self.agent_name,
            "agent_version": self.agent_version,
            "manifest_digest": self.manifest_digest,
            "highest_classification": self.highest_classification.value,
            "sealed_at": self.sealed_at,
            "step_count": self.step_count,
            "erased": self.erased,
            "legal_hold": self.legal_hold,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpecimenSummary:
        expected = {
            "specimen_id",
            "tenant_id",
            "agent_name",
            "agent_version",
            "manifest_digest",
            "highest_classification",
            "sealed_at",
            "step_count",
            "erased",
            "legal_hold",
        }
        if set(data) != expected:
            raise ValueError("specimen summary has missing or unknown keys")
        strings = (
            "specimen_id",
            "tenant_id",
            "agent_name",
            "agent_version",
            "manifest_digest",
            "sealed_at",
        )
        if not all(isinstance(data[k], str) for k in strings):
            raise ValueError("specimen summary identities must be strings")
        count = data["step_count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError("step_count must be a non-negative integer")
        if not isinstance(data["erased"], bool) or not isinstance(data["legal_hold"], bool):
            raise ValueError("erased and legal_hold must be booleans")
        return cls(
            specimen_id=data["specimen_id"],
            tenant_id=data["tenant_id"],
            agent_name=data["agent_name"],
            agent_version=data["agent_version"],
            manifest_digest=data["manifest_digest"],
            highest_classification=Classification(data["highest_classification"]),
            sealed_at=data["sealed_at"],
            step_count=count,
            erased=data["erased"],
            legal_hold=data["legal_hold"],
        )
