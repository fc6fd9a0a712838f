"""Access decisions with Cedar: principal (analyst), action, resource, context.

The policies and schema are data (``policies/access/*.cedar``, ``*.cedarschema``);
they are validated against the schema when loaded, and a set that does not validate
is refused. A decision is ``allowed`` only if Cedar answers Allow *and* evaluation
raised no error (an erroring forbid is skipped by Cedar, so an error must deny). A
denial names the deciding forbid's ``@code`` annotation, or ``not_permitted`` when no
permit applied.

Decisions are pure functions of their inputs, so the service keeps the recent ones
(``_DecisionMemo``): a page of 50 audits costs one evaluation per distinct set of
resource attributes, not one per row. Leaving the resource's id out of that key is
sound only when no policy can tell two resources with the same attributes apart; the
policy set is checked for that when loaded (``_blind_to_resource_ids``), and when it
can, the id stays in the key.

The context carries the stated purpose, the time and the data flow governed inference
would open: ``inference`` (whether the audit may ask a model again) and
``inference_classification`` (the highest classification of the governed boundaries'
recorded fields, ``""`` when none is asked). Sending restricted content to the provider
that saw it at capture is a flow the purpose must allow (``enclave.cedar``).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import cedarpy

from ledger import Classification

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
        self._memo = _DecisionMemo(id_blind=_blind_to_resource_ids(codes))

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
        inference: Classification | None = None,
    ) -> AccessDecision:
        """``inference``: the highest classification of the fields of the boundaries the
        audit may ask a model about (``inference_classification``); None: it asks none."""
        return self.authorize_many(
            analyst, action, [resource], purpose=purpose, now=now, inference=inference
        )[0]

    def authorize_many(
        self,
        analyst: Analyst,
        action: Action,
        resources: Sequence[Resource],
        *,
        purpose: str = "",
        now: datetime,
        inference: Classification | None = None,
    ) -> list[AccessDecision]:
        """One decision per resource, in order, from one Cedar evaluation call (a page of
        listed audits costs one call, not one per row); each request is decided on its own."""
        if not resources:
            return []
        if len({(r.kind, r.id) for r in resources}) != len(set(resources)):
            raise ValueError("two different resources share a kind and an id")
        seconds = int(now.timestamp())
        flow = "" if inference is None else Classification(inference).value
        context: dict[str, Any] = {
            "purpose": purpose,
            "time": seconds,
            "inference": inference is not None,
            "inference_classification": flow,
        }
        # everything the context holds is in the memo's key: a decision without inference
        # is never reused for one with it
        asked = (
            analyst.name,
            analyst.tenant,
            tuple(analyst.roles),
            action.value,
            purpose,
            inference is not None,
            flow,
        )
        keys = [self._memo.key(asked, seconds, r) for r in resources]
        found: dict[Any, AccessDecision] = {}
        missing: dict[Any, Resource] = {}
        for key, resource in zip(keys, resources, strict=True):
            if key in found or key in missing:
                continue
            held = self._memo.get(key)
            if held is None:
                missing[key] = resource
            else:
                found[key] = held
        if missing:
            decided = self._evaluate(analyst, action, list(missing.values()), context)
            for key, decision in zip(missing, decided, strict=True):
                found[key] = decision
                self._memo.put(key, decision)
        return [found[key] for key in keys]

    def _evaluate(
        self,
        analyst: Analyst,
        action: Action,
        resources: Sequence[Resource],
        context: dict[str, Any],
    ) -> list[AccessDecision]:
        principal = {
            "uid": {"type": "Analyst", "id": analyst.name},
            "attrs": {"name": analyst.name, "tenant": analyst.tenant, "roles": list(analyst.roles)},
            "parents": [],
        }
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


class _DecisionMemo:
    """The most recent decisions, keyed by everything Cedar sees: the analyst's name,
    tenant and roles, the action, the purpose, the inference flow, the time (in seconds,
    as the context carries it) and the resource (a frozen value: its kind and every
    attribute its entity is built from) — with its id blanked when the policy set is
    blind to resource ids. Shared by the threads of one process."""

    SIZE = 4096

    def __init__(self, *, id_blind: bool) -> None:
        self._id_blind = id_blind
        self._lock = threading.Lock()
        self._held: OrderedDict[Any, AccessDecision] = OrderedDict()

    def key(self, asked: tuple[Any, ...], time: int, resource: Resource) -> Any:
        return (*asked, time, replace(resource, id="") if self._id_blind else resource)

    def get(self, key: Any) -> AccessDecision | None:
        with self._lock:
            found = self._held.get(key)
            if found is not None:
                self._held.move_to_end(key)
            return found

    def put(self, key: Any, decision: AccessDecision) -> None:
        with self._lock:
            self._held[key] = decision
            self._held.move_to_end(key)
            while len(self._held) > self.SIZE:
                self._held.popitem(last=False)


def _blind_to_resource_ids(static_policies: dict[str, Any]) -> bool:
    """True when no policy can tell two resources with equal attributes apart: every
    resource scope is ``All`` or a bare ``is`` (no ``==``, no ``in``), and no condition
    holds an entity literal other than an action's. (Cedar offers no other way to read
    an id: ``resource == E::"x"`` and ``resource in E::"x"`` need such a literal.)"""

    def literals(node: Any) -> Iterator[Any]:
        if isinstance(node, dict):
            if "__entity" in node:
                yield node["__entity"]
            node = list(node.values())
        if isinstance(node, list):
            for value in node:
                yield from literals(value)

    for body in static_policies.values():
        scope = body.get("resource", {})
        if scope.get("op") not in ("All", "is") or "in" in scope:
            return False
        if any(
            not isinstance(entity, dict) or entity.get("type") != "Action"
            for entity in literals(body.get("conditions", []))
        ):
            return False
    return True
