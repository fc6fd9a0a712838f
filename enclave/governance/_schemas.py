"""Where a policy's tool is declared, and whether its parameters fit the field's schema.

A tool is known when a registered agent declares a boundary with the policy's name,
schema id and schema version (``AgentSpec.boundaries``). Checks return refusal codes
and never quote a value: a schema validator's own message would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger import StepKind
from ledger.certificates import is_valid, schema_is_valid

from .._errors import BadInput, Refused
from ..capture import AgentSpec, BoundarySpec, available_agents, load_agent
from ..replay import Strategy
from ..replay.targets import neutral_value, parse_pointer, schema_at
from ._policy import InterventionPolicy

__all__ = ["ToolDeclaration", "field_schema", "find_tool", "parameter_problems"]


@dataclass(frozen=True)
class ToolDeclaration:
    agent: AgentSpec
    boundary: BoundarySpec


def _agents() -> list[AgentSpec]:
    found = []
    for name in sorted(available_agents()):
        try:
            found.append(load_agent(name))
        except BadInput:
            continue  # a broken registration declares nothing
    return found


def find_tool(policy: InterventionPolicy, agents: list[AgentSpec] | None = None) -> ToolDeclaration:
    """The (agent, boundary) declaring the policy's tool at its schema id and version."""
    matches = []
    for agent in agents if agents is not None else _agents():
        for boundary in agent.boundaries:
            if (
                boundary.name == policy.tool
                and boundary.schema_id == policy.schema_id
                and boundary.schema_version == policy.schema_version
            ):
                matches.append(ToolDeclaration(agent, boundary))
    if not matches:
        raise Refused(
            "no registered agent declares that tool at that schema version", code="unknown_schema"
        )
    if len(matches) > 1:
        raise Refused(
            "several agents declare that tool and schema version", code="ambiguous_schema"
        )
    return matches[0]


def field_schema(boundary: BoundarySpec, field: str) -> Mapping[str, Any]:
    """The declared schema of the target, a top-level field or a nested member."""
    keys = parse_pointer(field)
    schema = None if not keys else schema_at(boundary.json_schema, keys)
    if schema is None:
        raise Refused("the tool's schema does not declare the target field", code="unknown_field")
    if not isinstance(schema, Mapping) or not schema_is_valid(schema):
        raise Refused(
            "the field's declared schema is not a valid JSON Schema", code="invalid_schema"
        )
    return dict(schema)


def _valid(value: Any, schema: Mapping[str, Any]) -> bool:
    return is_valid(value, schema)


def parameter_problems(policy: InterventionPolicy, tool: ToolDeclaration) -> list[str]:
    """Refusal codes (with the parameter's position, never its value) for a policy's
    parameters against its tool's declaration. Empty when everything fits."""
    return _inference_problems(policy, tool) + _strategy_problems(policy, tool)


def _inference_problems(policy: InterventionPolicy, tool: ToolDeclaration) -> list[str]:
    """Each grant names a model boundary the tool's agent declares: a grant opens a
    model call to the provider, never a retrieval or a tool."""
    models = {b.name for b in tool.agent.boundaries if b.kind is StepKind.MODEL}
    return [
        f"inference_boundary_unknown:inference[{i}]"
        for i, grant in enumerate(policy.inference)
        if grant.boundary not in models
    ]


def _strategy_problems(policy: InterventionPolicy, tool: ToolDeclaration) -> list[str]:
    if policy.strategy is Strategy.REVISION:
        point = tool.agent.revisions.get(policy.params.revision_point or "")
        if point is None or point.call_name != policy.tool:
            return ["unknown_revision"]
        return [
            f"unknown_revision:alternates[{i}]"
            for i, alt in enumerate(policy.params.alternates)
            if alt not in point.alternatives
        ]
    problems: list[str] = []
    if policy.strategy.value not in tool.agent.strategies:
        problems.append("strategy_not_declared")
    schema = field_schema(tool.boundary, policy.field)
    if policy.strategy is Strategy.REPLACE:
        problems += [
            f"out_of_bounds:alternates[{i}]"
            for i, alt in enumerate(policy.params.alternates)
            if not _valid(alt, schema)
        ]
    elif policy.strategy is Strategy.NULLIFY:
        try:
            if not _valid(neutral_value(schema), schema):
                problems.append("out_of_bounds:neutral")
        except Refused as exc:
            problems.append(exc.code)
    elif policy.strategy is Strategy.PERTURB:
        types = schema.get("type", [])
        types = [types] if isinstance(types, str) else list(types)
        if not {"number", "integer"} & set(types):
            problems.append("strategy_not_applicable")
        assert policy.params.delta is not None
        low, high = policy.params.delta
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        if isinstance(minimum, int | float) and isinstance(maximum, int | float):
            width = float(maximum) - float(minimum)
            if not math.isfinite(width) or max(abs(low), abs(high)) > width:
                problems.append("out_of_bounds:delta")
    return problems
