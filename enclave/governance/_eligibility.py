"""Fail-closed eligibility of an audit request. Every condition must hold; the first
that does not refuses with a code naming it (``Refused.code``). Steps, in order:

0. ``bad_input``            the request is well formed (an ``AuditRequest`` can be built).
1. ``unknown_specimen``     a specimen with that id is sealed in the ledger;
   ``wrong_tenant``         it belongs to the requester's tenant;
   ``not_sealed``           its run is sealed and complete;
   ``erased``               it has not been erased.
2. ``unbounded_outcome``    its manifest declares a bounded numeric outcome
                            (``score_bounds`` = [low, high], finite, low < high), or a
                            categorical one: no score bounds and no ``/score`` field in
                            its outcome (compared by decision flips alone).
3. the target call:
   ``unknown_call``         the call id names a recorded step (for a revision: the
                            step of the declared revision point);
   ``unstable_call``        the call id is the stable ``agent/name#n`` form of that
                            step, with a tool name;
   ``unknown_field``        the step recorded the target field (for a nested
                            pointer, its top-level field);
   ``target_unresolvable``  the field is retained as content with an evidence
                            reference and a keyed digest (a revision target: a
                            resolved identity and a response digest).
   ``bad_input``            with ``from_cut``: the specimen recorded that cut, every
                            call the intervention changes lies after it, and no
                            randomness was drawn before it (``enclave.replay._cuts``).
4. ``unknown_schema``       the step carries a schema id and version, and the agent
                            declares the same for that boundary (with a JSON Schema
                            for the target field).
5. ``strategy_not_declared`` the specimen's adapter declared the strategy (a revision:
                            the revision point and identity are declared).
   (``unknown_adapter`` when the specimen's agent is not registered here.)
6. ``no_active_policy``     an active intervention policy matches tenant, tool,
                            schema id and version, field and strategy;
   ``ambiguous_policy``     exactly one does;
   ``policy_mismatch``      if the request names a policy, it is that one.
7. ``parameter_not_authorised`` the value / delta / identity is one the policy allows;
   ``substitute_not_declared`` every substitute the policy declares authoritative is
                            one the agent declares (the request then carries them).
8. the policy's inference grants (``_inference``), metadata only:
   ``inference_boundary_unknown`` each names a boundary of the specimen's recorded steps;
   ``inference_not_pinned`` its model is the identity those steps' answers carry, where
                            the ledger holds that identity in clear (otherwise the
                            supervisor checks it before the first ask). The request
                            then carries the grants.
9. ``detail_not_granted``   a request for per-sample detail (every count: a v2
                            certificate, charged at its larger bound) names a policy
                            that grants it (``detail = "per-sample"``).

The disclosure budget is checked after this (``_budget``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger import (
    CanonicalizationError,
    NotFound,
    RunStatus,
    SpecimenRecord,
    StepRecord,
    canonical_json,
)

from .._errors import BadInput, Refused
from .._runtime import Runtime
from ..capture import AgentSpec, load_agent
from ..replay import AuditRequest, Intervention, Strategy, Tolerances
from ..replay.requests import COARSE_DETAIL, PER_SAMPLE
from ..replay.targets import check_cut_in_record, parse_pointer, schema_at
from ._inference import check_grants
from ._policy import IDENTITY_FIELD, InterventionPolicy, PolicyStatus
from ._registry import list_policies

__all__ = ["AuditDraft", "Eligible", "check_eligibility", "check_specimen", "is_categorical"]

_STABLE_CALL = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.:@-]+#[0-9]+")


@dataclass(frozen=True, kw_only=True)
class AuditDraft:
    """An audit request as an analyst sends it, before any check."""

    specimen_id: str
    strategy: str
    purpose: str
    samples: int
    seed: int
    call_id: str | None = None
    field: str | None = None
    value: Any = None
    value_given: bool = False
    delta: float | None = None
    revision: str | None = None  # "POINT=IDENTITY", e.g. "model=r2"
    tolerances: Mapping[str, Any] | None = None
    policy_id: str | None = None
    from_cut: str | None = None  # start every run from this declared cut (``docs/cuts.md``)
    detail: str = COARSE_DETAIL  # ``per-sample``: every count, where the policy grants it


def _detail(policy: InterventionPolicy, detail: str) -> None:
    # any other value is the request's to refuse (``AuditRequest``)
    if detail == PER_SAMPLE and policy.detail != PER_SAMPLE:
        raise Refused(
            "the policy grants no per-sample detail: certificates state coarse counts",
            code="detail_not_granted",
        )


@dataclass(frozen=True)
class Eligible:
    request: AuditRequest
    policy: InterventionPolicy
    record: SpecimenRecord
    target_call_id: str
    field: str  # the budget's field key: "/name" or "#identity"


def _tolerances(raw: Mapping[str, Any] | None) -> Tolerances:
    if raw is None:
        return Tolerances()
    items = []
    for layer, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise BadInput("a tolerance is a number (score) or 'exact' / 'ignore'")
        items.append(f"{layer}={value}")
    return Tolerances.parse(items)


def _intervention(draft: AuditDraft) -> Intervention:
    """The draft's intervention through the one intervention model (its rules and
    messages); a parameter left as None was not given."""
    data: dict[str, Any] = {"strategy": draft.strategy}
    for name in ("call_id", "field", "delta", "revision"):
        if getattr(draft, name) is not None:
            data[name] = getattr(draft, name)
    if draft.value_given:
        data["value"] = draft.value
    return Intervention.from_json(data)


def _sealed(runtime: Runtime, specimen_id: str, tenant: str) -> SpecimenRecord:
    # 1.
    try:
        record = runtime.ledger.get_specimen(specimen_id)
    except NotFound:
        raise Refused("no sealed specimen has that id", code="unknown_specimen") from None
    if record.tenant_id != tenant:
        raise Refused("the specimen belongs to another tenant", code="wrong_tenant")
    if runtime.ledger.run_status(specimen_id) is not RunStatus.SEALED:
        raise Refused("the specimen's run is not sealed and complete", code="not_sealed")
    if runtime.ledger.entries(kind="specimen.erased", subject=specimen_id):
        raise Refused("the specimen was erased", code="erased")
    return record


def is_categorical(manifest: Mapping[str, Any]) -> bool:
    """No score bounds and an outcome without a score: decisions are compared alone."""
    if manifest.get("score_bounds") is not None:
        return False
    outcomes = [s for s in manifest.get("steps") or [] if s.get("kind") == "outcome"]
    return len(outcomes) == 1 and all(
        f.get("path") != "/score" for f in outcomes[0].get("fields") or []
    )


def _bounded(record: SpecimenRecord) -> None:
    # 2.
    if is_categorical(record.manifest):
        return
    bounds = record.manifest.get("score_bounds")
    ok = (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(
            not isinstance(b, bool) and isinstance(b, int | float) and math.isfinite(b)
            for b in bounds
        )
        and bounds[0] < bounds[1]
    )
    if not ok:
        raise Refused("the specimen declares no bounded numeric outcome", code="unbounded_outcome")


def _target(record: SpecimenRecord, agent: AgentSpec, iv: Intervention) -> tuple[StepRecord, str]:
    # 3.
    steps = list(record.steps)
    if iv.strategy is Strategy.REVISION:
        assert iv.revision is not None
        point = agent.revisions.get(iv.revision[0])
        step = next((s for s in steps if point is not None and s.name == point.call_name), None)
        if step is None:
            raise Refused("the specimen has no call for that revision point", code="unknown_call")
        if not step.resolved or not step.response_digest:
            raise Refused(
                "the revision target has no resolved identity on record", code="target_unresolvable"
            )
        return step, IDENTITY_FIELD
    step = next((s for s in steps if s.call_id == iv.call_id), None)
    if step is None:
        raise Refused("the specimen has no call with that id", code="unknown_call")
    if (
        not step.name
        or not _STABLE_CALL.fullmatch(step.call_id)
        or f"/{step.name}#" not in step.call_id
    ):
        raise Refused("the target call has no stable call id and tool name", code="unstable_call")
    assert iv.field is not None
    keys = parse_pointer(iv.field)
    assert keys is not None  # checked when the intervention was built
    # a nested target lives inside its top-level field: that field holds the evidence
    top = "/" + keys[0]
    leaf = next(
        (f for f in record.fields if f.seq == step.seq and f.side == "response" and f.path == top),
        None,
    )
    if leaf is None:
        raise Refused("the target call recorded no such field", code="unknown_field")
    if leaf.retention.value != "encrypted" or not leaf.payload_ref or not leaf.keyed_digest:
        raise Refused(
            "the target field has no evidence reference and digest", code="target_unresolvable"
        )
    return step, iv.field


def _schema(agent: AgentSpec, step: StepRecord, field: str) -> None:
    # 4.
    if not step.schema_id or not step.schema_version:
        raise Refused("the target call carries no schema id and version", code="unknown_schema")
    try:
        boundary = agent.boundary(step.name)
    except KeyError:
        raise Refused(
            "the agent does not declare the target call's boundary", code="unknown_schema"
        ) from None
    if (boundary.schema_id, boundary.schema_version) != (step.schema_id, step.schema_version):
        raise Refused(
            "the recorded schema version is not the one the agent declares", code="unknown_schema"
        )
    if field != IDENTITY_FIELD:
        keys = parse_pointer(field)
        if keys is None or schema_at(boundary.json_schema, keys) is None:
            raise Refused("the target field has no declared schema", code="unknown_schema")


def _declared(record: SpecimenRecord, iv: Intervention) -> None:
    # 5.
    if iv.strategy is Strategy.REVISION:
        assert iv.revision is not None
        revisions = record.manifest.get("adapter", {}).get("revisions", {})
        point, identity = iv.revision
        if not isinstance(revisions, dict) or identity not in revisions.get(point, []):
            raise Refused("the adapter declared no such revision", code="strategy_not_declared")
    elif iv.strategy.value not in record.adapter.strategies:
        raise Refused("the adapter did not declare that strategy", code="strategy_not_declared")


def _policy(
    runtime: Runtime,
    record: SpecimenRecord,
    step: StepRecord,
    field: str,
    iv: Intervention,
    wanted: str | None,
) -> InterventionPolicy:
    # 6.
    matches = [
        p
        for p in list_policies(runtime, status=PolicyStatus.ACTIVE, tenant=record.tenant_id)
        if p.tool == step.name
        and (p.schema_id, p.schema_version) == (step.schema_id, step.schema_version)
        and p.field == field
        and p.strategy is iv.strategy
        and (
            iv.strategy is not Strategy.REVISION
            or p.params.revision_point == (iv.revision or ("",))[0]
        )
    ]
    if not matches:
        raise Refused("no active intervention policy authorises this test", code="no_active_policy")
    if len(matches) > 1:
        raise Refused(
            "more than one active policy matches; none is chosen", code="ambiguous_policy"
        )
    if wanted is not None and matches[0].id != wanted:
        raise Refused("the named policy is not the one that matches", code="policy_mismatch")
    return matches[0]


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except CanonicalizationError:
        raise BadInput("the value has no canonical JSON form") from None


def _authorised(policy: InterventionPolicy, iv: Intervention) -> None:
    # 7.
    params = policy.params
    if iv.strategy is Strategy.REPLACE:
        ok = any(_same(iv.value, alt) for alt in params.alternates)
    elif iv.strategy is Strategy.PERTURB:
        assert params.delta is not None and iv.delta is not None
        ok = params.delta[0] <= iv.delta <= params.delta[1]
    elif iv.strategy is Strategy.REVISION:
        ok = iv.revision is not None and iv.revision[1] in params.alternates
    else:
        ok = True
    if not ok:
        raise Refused(
            "the policy does not authorise that parameter", code="parameter_not_authorised"
        )


def _substitutes(agent: AgentSpec, policy: InterventionPolicy) -> None:
    # 7b. a substitute a policy takes as the service is one the agent declares
    declared = {b.name for b in agent.boundaries if b.substitute is not None}
    if not set(policy.authoritative_substitutes) <= declared:
        raise Refused(
            "the policy declares authoritative a substitute the agent does not declare",
            code="substitute_not_declared",
        )


def _cut(
    record: SpecimenRecord, agent: AgentSpec, iv: Intervention, step: StepRecord, name: str
) -> None:
    # 3b. replay from a cut: the changed calls lie after it, no randomness before it
    targets = [step.call_id]
    if iv.strategy is Strategy.REVISION:
        targets = [s.call_id for s in record.steps if s.name == step.name]
    check_cut_in_record(record.steps, name, targets)


def check_specimen(runtime: Runtime, specimen_id: str, *, tenant: str) -> SpecimenRecord:
    """Steps 1 and 2 alone: the conditions on the specimen itself, for an intervention
    that targets no recorded call (a code revision: ``enclave.release``)."""
    record = _sealed(runtime, specimen_id, tenant)
    _bounded(record)
    return record


def check_eligibility(
    runtime: Runtime, draft: AuditDraft, *, requester: str, tenant: str
) -> Eligible:
    # 0.
    intervention = _intervention(draft)
    if not isinstance(draft.purpose, str):
        raise BadInput("a purpose is required")
    request = AuditRequest(
        specimen_id=draft.specimen_id,
        intervention=intervention,
        purpose=draft.purpose,
        requester=requester,
        samples=draft.samples,
        seed=draft.seed,
        tolerances=_tolerances(draft.tolerances),
        from_cut=draft.from_cut,
    )
    record = _sealed(runtime, draft.specimen_id, tenant)
    _bounded(record)
    try:
        agent = load_agent(record.agent_name)
    except BadInput:
        raise Refused(
            "the specimen's agent is not registered here", code="unknown_adapter"
        ) from None
    step, field = _target(record, agent, intervention)
    if request.from_cut is not None:
        _cut(record, agent, intervention, step, request.from_cut)
    _schema(agent, step, field)
    _declared(record, intervention)
    policy = _policy(runtime, record, step, field, intervention, draft.policy_id)
    _authorised(policy, intervention)
    _substitutes(agent, policy)
    check_grants(record, policy.inference)  # 8.
    _detail(policy, draft.detail)  # 9.
    request = AuditRequest(
        specimen_id=request.specimen_id,
        intervention=intervention,
        purpose=request.purpose,
        requester=requester,
        samples=request.samples,
        seed=request.seed,
        tolerances=request.tolerances,
        policy=(policy.id, policy.version),
        from_cut=request.from_cut,
        authoritative_substitutes=policy.authoritative_substitutes,
        inference=policy.inference,
        detail=draft.detail,
    )
    return Eligible(
        request=request, policy=policy, record=record, target_call_id=step.call_id, field=field
    )
