"""Declared interventions (``_intervention``), applied to a recorded trajectory before
anything runs.

An intervention changes exactly what it declares. ``apply_intervention`` proves it:
the keyed digest of every undeclared leaf (each step's resolved identity and each
request/response leaf, nested object members one by one: ``_pointer``) is computed
before and after, and must be equal; the set of leaves that actually changed must equal
the declared set. Otherwise it refuses.

A field target is a JSON Pointer (``/limits/daily``) and declares one leaf: replacing an
object so that two or more of its leaves change is refused unless a declared bundle
names them. A revision declares the identity of every call of its revision point.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ledger import CanonicalizationError, canonical_json
from ledger.certificates import is_valid

from .._errors import BadInput, Refused
from ..capture import AgentSpec
from ..keys import TenantDigester
from ._intervention import CODE_TARGET, Intervention
from ._model import RecordedStep, Strategy, Trajectory, is_hole
from ._pointer import join_pointer, leaves_of, parse_pointer, schema_at

__all__ = [
    "AppliedIntervention",
    "apply_code_revision",
    "apply_intervention",
    "placebo_of",
]


@dataclass(frozen=True)
class AppliedIntervention:
    trajectory: Trajectory
    target_call_id: str
    target_seq: int
    declared_changes: tuple[str, ...]
    actual_changes: tuple[str, ...]
    unchanged_digest_before: str
    unchanged_digest_after: str
    original_digest: str  # keyed digest of the original target value
    counterfactual_digest: str  # keyed digest of the counterfactual target value

    @property
    def unchanged_digest_equal(self) -> bool:
        return self.unchanged_digest_before == self.unchanged_digest_after


def _leaves(trajectory: Trajectory) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for step in trajectory.steps:
        out[f"{step.call_id}#identity"] = step.resolved
        for side, values in (("request", step.request), ("response", step.response)):
            for name, value in values.items():
                prefix = f"{step.call_id}#{side}" + join_pointer((name,))
                out.update(leaves_of(prefix, value, hole=is_hole))
    return out


def _under(leaves: Mapping[str, Any], prefix: str) -> list[str]:
    return [k for k in leaves if k == prefix or k.startswith(prefix + "/")]


def _digest(digester: TenantDigester, value: Any) -> str:
    return digester.digest(canonical_json(value))


def neutral_value(schema: Mapping[str, Any]) -> Any:
    """A schema-valid neutral value: ``x-neutral`` if declared, else null, else a zero."""
    if "x-neutral" in schema:
        return schema["x-neutral"]
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    if "null" in types:
        return None
    if "number" in types or "integer" in types:
        minimum = schema.get("minimum", 0)
        return (
            max(0, minimum)
            if "maximum" not in schema or schema["maximum"] >= 0
            else schema["maximum"]
        )
    for kind, zero in (("string", ""), ("boolean", False), ("array", []), ("object", {})):
        if kind in types:
            return zero
    raise Refused("the field's schema declares no neutral value", code="no_neutral_value")


def _field_schema(agent: AgentSpec, step: RecordedStep, keys: tuple[str, ...]) -> Mapping[str, Any]:
    try:
        spec = agent.boundary(step.name)
    except KeyError:
        raise Refused("the target call's boundary is not declared", code="unknown_schema") from None
    schema = schema_at(spec.json_schema, keys)
    if schema is None:
        raise Refused("the target field has no declared schema", code="unknown_schema")
    return dict(schema)


def _read(response: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The recorded value at ``keys``; refused when the record cannot give it."""
    value: Any = response
    for depth, key in enumerate(keys):
        if is_hole(value[key]):
            raise Refused("the target field was withheld at capture", code="unresolvable")
        value = value[key]
        if depth + 1 < len(keys) and (not isinstance(value, dict) or keys[depth + 1] not in value):
            raise Refused("the recorded answer has no such member", code="unknown_field")
    return value


def _write(container: dict[str, Any], keys: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``container`` with ``keys`` set; objects on the path are copied, the
    rest shared (nothing recorded is mutated), and key order is kept."""
    out = dict(container)
    out[keys[0]] = value if len(keys) == 1 else _write(container[keys[0]], keys[1:], value)
    return out


def _counterfactual(
    intervention: Intervention, name: str, original: Any, schema: Mapping[str, Any]
) -> Any:
    """The value ``intervention`` puts at one target field (``name`` as the request
    gives it: a bundle's REPLACE gives one value per member)."""
    if intervention.strategy is Strategy.NULLIFY:
        value = neutral_value(schema)
    elif intervention.strategy is Strategy.REPLACE:
        value = intervention.value[name] if intervention.bundle else intervention.value
    else:
        if isinstance(original, bool) or not isinstance(original, int | float):
            raise Refused("perturb applies to numeric fields only", code="strategy_not_applicable")
        value = original + float(intervention.delta or 0.0)
    try:
        canonical_json(value)
    except CanonicalizationError:
        raise BadInput("the counterfactual value cannot be canonicalised") from None
    if not is_valid(value, schema):
        raise Refused(
            "the counterfactual value violates the field's schema or bounds", code="out_of_bounds"
        )
    return value


def apply_intervention(
    trajectory: Trajectory,
    intervention: Intervention,
    *,
    agent: AgentSpec,
    digester: TenantDigester,
) -> AppliedIntervention:
    steps = list(trajectory.steps)
    declared: tuple[str, ...] = ()
    prefixes: list[str] = []  # field targets: their leaves are declared from the diff
    original: Any
    counterfactual: Any
    if intervention.strategy is Strategy.REVISION:
        assert intervention.revision is not None
        point_name, identity = intervention.revision
        point = agent.revisions.get(point_name)
        if point is None:
            raise Refused("the agent declares no such revision point", code="unknown_revision")
        if identity not in point.alternatives:
            raise Refused("that revision is not one the agent declares", code="unknown_revision")
        # every call of the point: a later, decisive call must not keep the recorded answer
        indices = [i for i, s in enumerate(steps) if s.name == point.call_name]
        if not indices:
            raise Refused(
                "the specimen has no call for that revision point", code="unknown_revision"
            )
        target = steps[indices[0]]
        for i in indices:
            steps[i] = replace(
                steps[i], resolved=identity, intervened=True, serve_by_substitute=True
            )
        declared = tuple(f"{trajectory.steps[i].call_id}#identity" for i in indices)
        original, counterfactual = target.resolved, identity
    else:
        assert intervention.call_id is not None
        index = next((i for i, s in enumerate(steps) if s.call_id == intervention.call_id), None)
        if index is None:
            raise BadInput("the specimen has no call with that id")
        target = steps[index]
        if intervention.strategy.value not in _strategies(agent):
            raise Refused(
                "the adapter does not declare that strategy", code="strategy_not_declared"
            )
        names = _target_fields(agent, target, intervention)
        response = dict(target.response)
        originals, counterfactuals = {}, {}
        for name, keys in names.items():
            if keys[0] not in target.response:
                raise Refused(
                    "the target field is not retained in the specimen", code="unresolvable"
                )
            if is_hole(target.response[keys[0]]):
                raise Refused("the target field was withheld at capture", code="unresolvable")
            schema = _field_schema(agent, target, keys)
            originals[name] = _read(target.response, keys)
            counterfactuals[name] = _counterfactual(intervention, name, originals[name], schema)
            response = _write(response, keys, counterfactuals[name])
        steps[index] = replace(target, response=response, intervened=True)
        prefixes = [f"{target.call_id}#response" + join_pointer(k) for k in names.values()]
        if intervention.bundle:
            original, counterfactual = originals, counterfactuals
        else:
            (original,), (counterfactual,) = originals.values(), counterfactuals.values()

    after = Trajectory(trajectory.specimen_id, trajectory.agent, trajectory.seed, tuple(steps))
    before_leaves, after_leaves = _leaves(trajectory), _leaves(after)
    changed = _changed(before_leaves, after_leaves)
    if prefixes:
        declared = _declared_leaves(
            before_leaves, after_leaves, changed, prefixes, bundle=bool(intervention.bundle)
        )
    actual = tuple(sorted(changed))
    undeclared_before = {k: v for k, v in before_leaves.items() if k not in declared}
    undeclared_after = {k: v for k, v in after_leaves.items() if k not in declared}
    applied = AppliedIntervention(
        trajectory=after,
        target_call_id=target.call_id,
        target_seq=target.seq,
        declared_changes=declared,
        actual_changes=actual,
        unchanged_digest_before=_digest(digester, undeclared_before),
        unchanged_digest_after=_digest(digester, undeclared_after),
        original_digest=_digest(digester, original),
        counterfactual_digest=_digest(digester, counterfactual),
    )
    if not applied.unchanged_digest_equal or not set(actual) <= set(declared):
        raise Refused("the intervention would change undeclared fields", code="undeclared_change")
    if not actual:
        raise Refused("the counterfactual equals the recorded value", code="no_change")
    return applied


def apply_code_revision(
    trajectory: Trajectory, *, captured: str, candidate: str, digester: TenantDigester
) -> AppliedIntervention:
    """A candidate release as the one intervention: the recorded trajectory is left as
    it is (every leaf undeclared and unchanged, which the digests show) and the one
    declared change is the code, from the captured digest to the candidate's."""
    if captured == candidate:
        raise Refused("the candidate is the captured code", code="no_change")
    leaves = _digest(digester, _leaves(trajectory))
    return AppliedIntervention(
        trajectory=trajectory,
        target_call_id=CODE_TARGET,
        target_seq=-1,
        declared_changes=(CODE_TARGET,),
        actual_changes=(CODE_TARGET,),
        unchanged_digest_before=leaves,
        unchanged_digest_after=_digest(digester, _leaves(trajectory)),
        original_digest=_digest(digester, captured),
        counterfactual_digest=_digest(digester, candidate),
    )


_ABSENT: Any = object()  # a leaf one side does not have (None is a value)


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Leaves whose value differs, including leaves only one side has."""
    return [
        k
        for k in {**before, **after}
        if k not in before
        or k not in after
        or canonical_json(before[k]) != canonical_json(after[k])
    ]


def _declared_leaves(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    changed: list[str],
    prefixes: list[str],
    *,
    bundle: bool,
) -> tuple[str, ...]:
    """The leaves a field intervention declares. A bundle declares every leaf under its
    members. A single target declares the one leaf it changes: an object replaced so
    that several leaves change is not one declared change, and is refused."""
    out: list[str] = []
    both = {**before, **after}
    for prefix in prefixes:
        under = _under(both, prefix)
        if bundle:
            out.extend(k for k in under if k not in out)
            continue
        inside = set(under)
        here = [k for k in changed if k in inside]
        if len(here) > 1:
            raise Refused(
                "the intervention would change several leaves; declare a bundle",
                code="undeclared_change",
            )
        out.extend(here or [prefix])
    return tuple(out)


def _target_fields(
    agent: AgentSpec, step: RecordedStep, intervention: Intervention
) -> dict[str, tuple[str, ...]]:
    """{name as the request gives it: the keys it points to}."""
    if intervention.bundle is None:
        assert intervention.field is not None
        keys = parse_pointer(intervention.field)
        assert keys is not None  # checked when the intervention was built
        return {intervention.field: keys}
    try:
        spec = agent.boundary(step.name)
    except KeyError:
        raise Refused("the target call's boundary is not declared", code="unknown_schema") from None
    fields = spec.bundles.get(intervention.bundle)
    if not fields:
        raise Refused("the boundary declares no such bundle", code="undeclared_bundle")
    if intervention.strategy is Strategy.REPLACE and set(intervention.value) != set(fields):
        raise BadInput("a bundle REPLACE must give a value for exactly the bundle's fields")
    out: dict[str, tuple[str, ...]] = {}
    for member in fields:
        # a member is a top-level field name, or a pointer to a nested one
        keys = parse_pointer(member) if member.startswith("/") else (member,)
        if keys is None:
            raise Refused("the declared bundle names an invalid pointer", code="undeclared_bundle")
        out[member] = keys
    return out


def placebo_of(trajectory: Trajectory, applied: AppliedIntervention) -> Trajectory:
    """The same departure point and the same marked steps (every call of a revision
    point), each keeping its own recorded value or identity."""
    steps = []
    for step, twin in zip(trajectory.steps, applied.trajectory.steps, strict=True):
        if twin.intervened:
            step = replace(step, intervened=True, serve_by_substitute=twin.serve_by_substitute)
        steps.append(step)
    return Trajectory(trajectory.specimen_id, trajectory.agent, trajectory.seed, tuple(steps))


def _strategies(agent: AgentSpec) -> tuple[str, ...]:
    return tuple(agent.strategies)
