"""The intervention policy: a versioned, declarative authorisation of one kind of test.

A policy names one tool (by boundary name, schema id and schema version), one target
field and one strategy, and bounds what an audit may set:

* ``nullify``  — no parameters (the field's neutral schema-valid value is used);
* ``replace``  — ``alternates``: the authorised alternate values;
* ``perturb``  — ``delta = [min, max]``: the authorised range of the change;
* ``revision`` — ``revision_point`` and ``alternates``: the authorised identities
  (the target field is ``#identity``).

A policy may name ``authoritative_substitutes``: boundaries whose declared substitute it
takes as the service itself. An audit's label may rest on a substitute's answers to
requests the record does not hold only for those (``enclave.replay``: otherwise the label
is capped at inconclusive); each must be a boundary the specimen's agent declares with a
substitute (checked at eligibility).

Every policy also carries a disclosure ``budget`` per analyst per (specimen, field)
within a window, in bits: each admitted audit is charged its certificate's disclosure
bound (``enclave.replay`` — what its agent-influenced content can carry); ``audits``
optionally caps the count as well. A budget that names only ``audits`` (the earlier
form) is worth ``audits × BITS_PER_AUDIT`` bits. A policy file is TOML (see
``policies/interventions``). Invalid policies cannot be built; error messages name
the offending key, never a value.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ledger import CanonicalizationError, canonical_json, loads

from .._errors import BadInput
from ..replay import Strategy
from ..replay.targets import parse_pointer
from ..store import validate_id

__all__ = [
    "BITS_PER_AUDIT",
    "Budget",
    "InterventionPolicy",
    "PolicyParams",
    "PolicyStatus",
    "IDENTITY_FIELD",
]

IDENTITY_FIELD = "#identity"
_POLICY_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:/#-]{0,127}")
_FIELD = re.compile(r"/[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_MAX_ALTERNATES = 64
_MAX_WINDOW = 366 * 24 * 3600
_BUDGET_KEYS = {"audits", "bits", "window_seconds"}
_TOP_KEYS = {
    "id",
    "version",
    "tenant",
    "provider",
    "tool",
    "schema_id",
    "schema_version",
    "field",
    "strategy",
    "description",
    "params",
    "budget",
    "authoritative_substitutes",
}
# a boundary name as it appears in call ids (no "/" or "#")
_BOUNDARY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
_MAX_AUTHORITATIVE = 64


class PolicyStatus(StrEnum):
    DRAFT = "draft"
    VALIDATED = "validated"
    ACTIVE = "active"
    RETIRED = "retired"


# What one audit of a budget given as a count stands for: above the disclosure bound of
# a 1,000-sample audit of a specimen with a few dozen calls (about 3,800 bits, most of it
# the per-sample decision rows). A larger audit discloses more and is charged its own
# bound: a budget in bits admits it only if the policy grants that much.
BITS_PER_AUDIT = 4096.0
_MAX_BITS = 1e9


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Per analyst per (specimen, field) per window: at most ``bits`` of disclosure bound
    in total and, if given, at most ``audits`` requests. ``bits`` defaults to
    ``audits × BITS_PER_AUDIT``; one of the two must be given."""

    window_seconds: int
    audits: int | None = None
    bits: float | None = None

    def __post_init__(self) -> None:
        for name in ("audits", "window_seconds"):
            value = getattr(self, name)
            if name == "audits" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise BadInput(f"policy budget.{name} must be an integer")
        if self.audits is not None and not 1 <= self.audits <= 10_000:
            raise BadInput("policy budget.audits must lie in 1..10000")
        if not 60 <= self.window_seconds <= _MAX_WINDOW:
            raise BadInput("policy budget.window_seconds must lie in 60..31622400")
        bits = self.bits
        if bits is None:
            if self.audits is None:
                raise BadInput("policy budget needs bits or audits")
            object.__setattr__(self, "bits", float(self.audits * BITS_PER_AUDIT))
        elif (
            isinstance(bits, bool)
            or not isinstance(bits, int | float)
            or not 1 <= bits <= _MAX_BITS
        ):
            raise BadInput("policy budget.bits must be a number in 1..1e9")
        else:
            object.__setattr__(self, "bits", float(bits))

    @property
    def bits_total(self) -> float:
        assert self.bits is not None  # set in __post_init__
        return self.bits

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"window_seconds": self.window_seconds, "bits": self.bits}
        if self.audits is not None:
            out["audits"] = self.audits
        return out


@dataclass(frozen=True, kw_only=True)
class PolicyParams:
    alternates: tuple[Any, ...] = ()
    delta: tuple[float, float] | None = None
    revision_point: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.alternates:
            out["alternates"] = list(self.alternates)
        if self.delta is not None:
            out["delta"] = list(self.delta)
        if self.revision_point is not None:
            out["revision_point"] = self.revision_point
        return out


def _is_field(target: str) -> bool:
    """A JSON Pointer to a response member, each of its names a plain field name."""
    keys = parse_pointer(target)
    return bool(keys) and all(_FIELD.fullmatch("/" + key) for key in keys or ())


def _check_params(strategy: Strategy, target: str, params: PolicyParams) -> None:
    if strategy is Strategy.CODE:  # a candidate release is no policy's to authorise
        raise BadInput("policy strategy must be nullify, replace, perturb or revision")
    if strategy is Strategy.REVISION:
        if target != IDENTITY_FIELD:
            raise BadInput(f"a revision policy's field must be {IDENTITY_FIELD}")
    elif not _is_field(target):
        raise BadInput("policy field must be a response field pointer like /name or /a/b")
    wants = {
        Strategy.NULLIFY: set(),
        Strategy.REPLACE: {"alternates"},
        Strategy.PERTURB: {"delta"},
        Strategy.REVISION: {"alternates", "revision_point"},
    }[strategy]
    given = set(params.to_dict())
    if given != wants:
        names = ", ".join(sorted(wants)) or "no parameters"
        raise BadInput(f"a {strategy.value} policy takes exactly: {names}")
    if params.alternates:
        if len(params.alternates) > _MAX_ALTERNATES:
            raise BadInput(f"policy params.alternates holds at most {_MAX_ALTERNATES} values")
        try:
            encoded = [canonical_json(v) for v in params.alternates]
        except CanonicalizationError:
            raise BadInput(
                "policy params.alternates holds a value with no canonical form"
            ) from None
        if len(set(encoded)) != len(encoded):
            raise BadInput("policy params.alternates repeats a value")
    if strategy is Strategy.REVISION:
        if not all(isinstance(v, str) and _NAME.fullmatch(v) for v in params.alternates):
            raise BadInput("revision alternates must be identity names")
        if not isinstance(params.revision_point, str) or not _NAME.fullmatch(params.revision_point):
            raise BadInput("policy params.revision_point must be a revision point name")
    if params.delta is not None:
        low, high = params.delta
        if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
            raise BadInput("policy params.delta must be [min, max] with finite min < max")


@dataclass(frozen=True, kw_only=True)
class InterventionPolicy:
    id: str
    version: int
    tenant: str
    tool: str
    schema_id: str
    schema_version: str
    field: str
    strategy: Strategy
    params: PolicyParams
    budget: Budget
    provider: str
    status: PolicyStatus = PolicyStatus.DRAFT
    source_digest: str = ""
    description: str = ""
    created_at: str | None = None
    updated_at: str | None = None
    activated_at: str | None = None
    retired_at: str | None = None
    authoritative_substitutes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _POLICY_ID.fullmatch(self.id):
            raise BadInput("policy id must be 1-128 lower-case letters, digits, '.', '_' or '-'")
        if (
            isinstance(self.version, bool)
            or not isinstance(self.version, int)
            or not 1 <= self.version < 2**31
        ):
            raise BadInput("policy version must be a positive integer")
        validate_id(self.tenant, what="policy tenant")
        for name in ("tool", "schema_id", "schema_version", "provider"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME.fullmatch(value):
                raise BadInput(f"policy {name} must be a short name")
        if not isinstance(self.strategy, Strategy):
            raise BadInput("policy strategy must be nullify, replace, perturb or revision")
        if not isinstance(self.description, str) or len(self.description) > 1000:
            raise BadInput("policy description must be text of at most 1000 characters")
        _check_params(self.strategy, self.field, self.params)
        names = self.authoritative_substitutes
        if (
            not isinstance(names, tuple)
            or len(names) > _MAX_AUTHORITATIVE
            or not all(isinstance(n, str) and _BOUNDARY.fullmatch(n) for n in names)
            or len(set(names)) != len(names)
        ):
            raise BadInput("policy authoritative_substitutes must be distinct boundary names")

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.version)

    @property
    def label(self) -> str:
        return f"{self.id}@{self.version}"

    def params_dict(self) -> dict[str, Any]:
        out = {**self.params.to_dict(), "budget": self.budget.to_dict()}
        if self.authoritative_substitutes:
            out["authoritative_substitutes"] = list(self.authoritative_substitutes)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The REST/CLI view: what a policy authorises (its own values, no captured content)."""
        return {
            "id": self.id,
            "version": self.version,
            "tenant": self.tenant,
            "tool": self.tool,
            "schema_id": self.schema_id,
            "schema_version": self.schema_version,
            "field": self.field,
            "strategy": self.strategy.value,
            "params": self.params_dict(),
            "provider": self.provider,
            "status": self.status.value,
            "source_digest": self.source_digest,
            "description": self.description,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "activated_at": self.activated_at,
            "retired_at": self.retired_at,
        }

    def ledger_body(self) -> dict[str, Any]:
        """What a ``policy.*`` ledger entry records about this policy."""
        return {
            "policy_id": self.id,
            "version": self.version,
            "tenant": self.tenant,
            "tool": self.tool,
            "schema": {"id": self.schema_id, "version": self.schema_version},
            "field": self.field,
            "strategy": self.strategy.value,
            "provider": self.provider,
            "source_digest": self.source_digest,
        }

    # -- parsing ------------------------------------------------------------------

    @classmethod
    def from_toml(cls, data: bytes) -> InterventionPolicy:
        """Parse a policy file; ``source_digest`` is the SHA-256 of its exact bytes."""
        try:
            doc = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            # the decoder's message quotes the offending line
            raise BadInput("policy file is not valid UTF-8 TOML") from None
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        return cls.from_mapping(doc, source_digest=digest)

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any], *, source_digest: str) -> InterventionPolicy:
        unknown = set(doc) - _TOP_KEYS
        if unknown:
            raise BadInput("policy file has unknown top-level keys")
        missing = {
            "id",
            "version",
            "tenant",
            "provider",
            "tool",
            "schema_id",
            "schema_version",
            "field",
            "strategy",
            "budget",
        } - set(doc)
        if missing:
            raise BadInput("policy file misses required keys: " + ", ".join(sorted(missing)))
        try:
            strategy = Strategy(str(doc["strategy"]).lower())
        except ValueError:
            raise BadInput(
                "policy strategy must be nullify, replace, perturb or revision"
            ) from None
        authoritative = doc.get("authoritative_substitutes", [])
        if not isinstance(authoritative, list):
            raise BadInput("policy authoritative_substitutes must be a list of boundary names")
        raw_params = doc.get("params", {})
        raw_budget = doc["budget"]
        if not isinstance(raw_params, Mapping) or not isinstance(raw_budget, Mapping):
            raise BadInput("policy params and budget must be tables")
        if set(raw_params) - {"alternates", "delta", "revision_point"}:
            raise BadInput("policy params has unknown keys")
        keys = set(raw_budget)
        if "window_seconds" not in keys or not keys & {"audits", "bits"} or keys - _BUDGET_KEYS:
            raise BadInput("policy budget needs window_seconds and bits or audits (or both)")
        return cls(
            id=doc["id"],
            version=doc["version"],
            tenant=doc["tenant"],
            tool=doc["tool"],
            schema_id=str(doc["schema_id"]),
            schema_version=str(doc["schema_version"]),
            field=doc["field"],
            strategy=strategy,
            params=_params(raw_params),
            budget=Budget(
                window_seconds=raw_budget["window_seconds"],
                audits=raw_budget.get("audits"),
                bits=raw_budget.get("bits"),
            ),
            provider=doc["provider"],
            description=doc.get("description", ""),
            source_digest=source_digest,
            authoritative_substitutes=tuple(authoritative),
        )

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> InterventionPolicy:
        params = loads(row["params_json"])
        if not isinstance(params, dict) or not isinstance(params.get("budget"), dict):
            raise ValueError("stored policy parameters are malformed")
        budget = params.pop("budget")
        description = params.pop("description", "")
        authoritative = params.pop("authoritative_substitutes", [])
        return cls(
            id=row["id"],
            version=int(row["version"]),
            tenant=row["tenant"],
            tool=row["tool"],
            schema_id=row["schema_id"],
            schema_version=row["schema_version"],
            field=row["field"],
            strategy=Strategy(row["strategy"]),
            params=_params(params),
            budget=Budget(**budget),
            provider=row["provider"],
            status=PolicyStatus(row["status"]),
            source_digest=row["source_digest"],
            description=description,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            activated_at=row["activated_at"],
            retired_at=row["retired_at"],
            authoritative_substitutes=tuple(authoritative),
        )

    def to_row(self) -> dict[str, Any]:
        stored = {**self.params_dict(), "description": self.description}
        return {
            "id": self.id,
            "version": self.version,
            "tenant": self.tenant,
            "tool": self.tool,
            "schema_id": self.schema_id,
            "schema_version": self.schema_version,
            "field": self.field,
            "strategy": self.strategy.value,
            "params_json": canonical_json(stored).decode(),
            "provider": self.provider,
            "status": self.status.value,
            "source_digest": self.source_digest,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "activated_at": self.activated_at,
            "retired_at": self.retired_at,
        }


def _params(raw: Mapping[str, Any]) -> PolicyParams:
    alternates = raw.get("alternates", [])
    if not isinstance(alternates, list):
        raise BadInput("policy params.alternates must be a list")
    delta = raw.get("delta")
    bounds: tuple[float, float] | None = None
    if delta is not None:
        if (
            not isinstance(delta, list)
            or len(delta) != 2
            or any(isinstance(v, bool) or not isinstance(v, int | float) for v in delta)
        ):
            raise BadInput("policy params.delta must be [min, max]")
        bounds = (float(delta[0]), float(delta[1]))
    point = raw.get("revision_point")
    return PolicyParams(alternates=tuple(alternates), delta=bounds, revision_point=point)
