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

A policy may carry ``[[inference]]`` tables, each an ``InferenceGrant`` (the boundary,
the operator's endpoint name, the pinned model identity, ``vary`` and an
``[inference.caps]`` table): after departure, a call of that boundary the record does not
hold may be asked of the endpoint (``enclave.replay.inference``). The grants travel with
every request the policy authorises; eligibility checks them against the specimen's
metadata, Cedar decides whether the purpose allows the data flow.

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
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ledger import canonical_json, loads

from .._errors import BadInput
from ..replay import Strategy
from ..replay.inference import InferenceGrant
from ..replay.requests import COARSE_DETAIL, DETAILS
from ..store import validate_id
from ._budget import BUDGET_KEYS, Budget
from ._params import IDENTITY_FIELD, PolicyParams, check_params, params_of

__all__ = ["IDENTITY_FIELD", "InterventionPolicy", "PolicyParams", "PolicyStatus"]

_POLICY_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:/#-]{0,127}")
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
    "inference",
    "detail",
}
# a boundary name as it appears in call ids (no "/" or "#")
_BOUNDARY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
_MAX_AUTHORITATIVE = 64
_MAX_GRANTS = 16  # as many as one audit request carries


class PolicyStatus(StrEnum):
    DRAFT = "draft"
    VALIDATED = "validated"
    ACTIVE = "active"
    RETIRED = "retired"


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
    inference: tuple[InferenceGrant, ...] = ()
    # ``per-sample``: an audit may ask for every count (``AuditRequest.detail``)
    detail: str = COARSE_DETAIL

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
        check_params(self.strategy, self.field, self.params)
        names = self.authoritative_substitutes
        if (
            not isinstance(names, tuple)
            or len(names) > _MAX_AUTHORITATIVE
            or not all(isinstance(n, str) and _BOUNDARY.fullmatch(n) for n in names)
            or len(set(names)) != len(names)
        ):
            raise BadInput("policy authoritative_substitutes must be distinct boundary names")
        if self.detail not in DETAILS:
            raise BadInput("policy detail must be coarse or per-sample")
        grants = self.inference
        if (
            not isinstance(grants, tuple)
            or len(grants) > _MAX_GRANTS
            or not all(isinstance(g, InferenceGrant) for g in grants)
            or len({g.boundary for g in grants}) != len(grants)
        ):
            raise BadInput("policy inference grants name distinct boundaries, at most 16")

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
        if self.inference:
            out["inference"] = [g.to_dict() for g in self.inference]
        if self.detail != COARSE_DETAIL:
            out["detail"] = self.detail
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
            **({"inference": [g.to_dict() for g in self.inference]} if self.inference else {}),
            **({"detail": self.detail} if self.detail != COARSE_DETAIL else {}),
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
        if "window_seconds" not in keys or not keys & {"audits", "bits"} or keys - BUDGET_KEYS:
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
            params=params_of(raw_params),
            budget=Budget(
                window_seconds=raw_budget["window_seconds"],
                audits=raw_budget.get("audits"),
                bits=raw_budget.get("bits"),
            ),
            provider=doc["provider"],
            description=doc.get("description", ""),
            source_digest=source_digest,
            authoritative_substitutes=tuple(authoritative),
            inference=_grants(doc.get("inference", [])),
            detail=doc.get("detail", COARSE_DETAIL),
        )

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> InterventionPolicy:
        params = loads(row["params_json"])
        if not isinstance(params, dict) or not isinstance(params.get("budget"), dict):
            raise ValueError("stored policy parameters are malformed")
        budget = params.pop("budget")
        description = params.pop("description", "")
        authoritative = params.pop("authoritative_substitutes", [])
        grants = _grants(params.pop("inference", []))
        detail = params.pop("detail", COARSE_DETAIL)
        return cls(
            id=row["id"],
            version=int(row["version"]),
            tenant=row["tenant"],
            tool=row["tool"],
            schema_id=row["schema_id"],
            schema_version=row["schema_version"],
            field=row["field"],
            strategy=Strategy(row["strategy"]),
            params=params_of(params),
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
            inference=grants,
            detail=detail,
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


def _grants(raw: Any) -> tuple[InferenceGrant, ...]:
    """``[[inference]]`` tables as grants; a message names the key, never a value."""
    if not isinstance(raw, list):
        raise BadInput("policy inference must be [[inference]] tables")
    grants = []
    for table in raw:
        try:
            grants.append(InferenceGrant.from_dict(table))
        except BadInput as exc:  # the grant's own message: the key at fault, no value
            raise BadInput(f"policy {exc}") from None
    return tuple(grants)
