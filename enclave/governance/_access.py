"""Access decisions with Cedar: principal (analyst), action, resource, context.

The policies and schema are data (``policies/access/*.cedar``, ``*.cedarschema``);
they are validated against the schema when loaded, and a set that does not validate
is refused. A decision is ``allowed`` only if Cedar answers Allow *and* evaluation
raised no error (an erroring forbid is skipped by Cedar, so an error must deny). A
denial names the deciding forbid's ``@code`` annotation, or ``not_permitted`` when no
permit applied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import cedarpy

from .._errors import BadInput
from .._policies import policies_root
from ._analysts import Analyst

__all__ = ["AccessDecision", "AccessPolicy", "Action", "Resource", "policies_root"]


class Action(StrEnum):
    LIST_SPECIMENS = "list_specimens"
    READ_SPECIMEN = "read_specimen"
    LIST_POLICIES = "list_policies"
    REQUEST_AUDIT = "request_audit"
    READ_AUDIT = "read_audit"
    CANCEL_AUDIT = "cancel_audit"
    READ_CERTIFICATE = "read_certificate"
    READ_LEDGER = "read_ledger"
    READ_REPORT = "read_report"


@dataclass(frozen=True, kw_only=True)
class Resource:
    """What an action is on. ``kind`` is a Cedar entity type of the schema."""

    kind: str  # Specimen | Audit | Report | Tenant | Ledger
    id: str
    tenant: str | None = None  # a Report's: None when its specimens span tenants
    classification: str | None = None
    legal_hold: bool = False
    requester: str | None = None  # an audit's requester

    @classmethod
    def tenant_of(cls, tenant: str) -> Resource:
        return cls(kind="Tenant", id=tenant, tenant=tenant)

    @classmethod
    def ledger(cls) -> Resource:
        return cls(kind="Ledger", id="main")

    @classmethod
    def report(cls, report_id: str, tenant: str | None) -> Resource:
        """A release report; ``tenant`` None when its specimens span tenants."""
        return cls(kind="Report", id=report_id, tenant=tenant)

    def entity(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if self.kind in ("Specimen", "Audit"):
            attrs = {
                "tenant": self.tenant or "",
                "classification": self.classification or "restricted",
                "legal_hold": bool(self.legal_hold),
            }
            if self.kind == "Audit":
                attrs["requester"] = self.requester or ""
        elif self.kind == "Tenant":
            attrs = {"tenant": self.tenant or ""}
        elif self.kind == "Report":
            attrs = {"tenant": self.tenant or "", "spans_tenants": self.tenant is None}
        return {"uid": {"type": self.kind, "id": self.id}, "attrs": attrs, "parents": []}


@dataclass(frozen=True)
class AccessDecision:
    allowed: bool
    code: str  # "allowed", a forbid's @code, "not_permitted" or "evaluation_error"


class AccessPolicy:
    """A validated Cedar policy set and its schema."""

    def __init__(self, *, policies: str, schema: str) -> None:
        try:
            result = cedarpy.validate_policies(policies, schema)
            codes = json.loads(cedarpy.policies_to_json_str(policies)).get("staticPolicies", {})
        except (ValueError, RuntimeError, TypeError) as exc:
            raise BadInput("the access policies or schema do not parse") from exc
        if not result.validation_passed:
            raise BadInput("the access policies do not validate against the schema")
        self._policies = cedarpy.PolicySet.from_str(policies)
        self._schema = cedarpy.Schema.from_str(schema)
        self._codes = {
            name: str(
                body.get("annotations", {}).get("code")
                or body.get("annotations", {}).get("id")
                or name
            )
            for name, body in codes.items()
        }
        self._effects = {name: body.get("effect") for name, body in codes.items()}

    @classmethod
    def load(cls, directory: Path | None = None) -> AccessPolicy:
        folder = directory or policies_root() / "access"
        try:
            policies = "\n".join(p.read_text() for p in sorted(folder.glob("*.cedar")))
            schema = "\n".join(p.read_text() for p in sorted(folder.glob("*.cedarschema")))
        except OSError as exc:
            raise BadInput("the access policy folder cannot be read") from exc
        if not policies.strip() or not schema.strip():
            raise BadInput("the access policy folder needs *.cedar and *.cedarschema files")
        return cls(policies=policies, schema=schema)

    def authorize(
        self,
        analyst: Analyst,
        action: Action,
        resource: Resource,
        *,
        purpose: str = "",
        now: datetime,
    ) -> AccessDecision:
        return self.authorize_many(analyst, action, [resource], purpose=purpose, now=now)[0]

    def authorize_many(
        self,
        analyst: Analyst,
        action: Action,
        resources: Sequence[Resource],
        *,
        purpose: str = "",
        now: datetime,
    ) -> list[AccessDecision]:
        """One decision per resource, in order, from one Cedar evaluation call (a page of
        listed audits costs one call, not one per row); each request is decided on its own."""
        if not resources:
            return []
        principal = {
            "uid": {"type": "Analyst", "id": analyst.name},
            "attrs": {"name": analyst.name, "tenant": analyst.tenant, "roles": list(analyst.roles)},
            "parents": [],
        }
        context = {"purpose": purpose, "time": int(now.timestamp())}
        requests = [
            {
                "principal": {"type": "Analyst", "id": analyst.name},
                "action": {"type": "Action", "id": action.value},
                "resource": {"type": r.kind, "id": r.id},
                "context": context,
            }
            for r in resources
        ]
        entities = {(r.kind, r.id): r.entity() for r in resources}
        if len(entities) != len(set(resources)):
            raise ValueError("two different resources share a kind and an id")
        results = cedarpy.is_authorized_batch(
            requests, self._policies, [principal, *entities.values()], schema=self._schema
        )
        return [self._decision(result) for result in results]

    def _decision(self, result: cedarpy.AuthzResult) -> AccessDecision:
        if result.diagnostics.errors:
            return AccessDecision(False, "evaluation_error")
        if result.allowed:
            return AccessDecision(True, "allowed")
        forbids = {r for r in result.diagnostics.reasons if self._effects.get(r) == "forbid"}
        if forbids:
            first = next(name for name in self._codes if name in forbids)  # file order
            return AccessDecision(False, self._codes[first])
        return AccessDecision(False, "not_permitted")
