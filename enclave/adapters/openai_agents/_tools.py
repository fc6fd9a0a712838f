"""Function tools: one TOOL boundary each, and the run's copy of the agents whose tools
cross ``ctx``.

A tool's ``on_invoke_tool`` (the SDK's public invoker field, failure handling
included) is wrapped with ``dataclasses.replace``; agents are copied with
``Agent.clone``, through their handoffs (an agent given as a handoff is copied; a
``Handoff`` object's target is copied when it is handed off to). The request is the
tool's arguments as JSON; the response is its output, as the return type's
``TypeAdapter`` dumps it (JSON values as they are): the same value comes back at
capture and at replay.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agents import Agent, FunctionTool, Handoff
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from ledger import StepKind, canonical_json

from ...capture import BoundarySpec, Context, FieldPolicy, policy

__all__ = ["Routes", "return_adapter", "tool_boundary", "walk"]

_SEALED = policy("confidential")


def return_adapter(tool: FunctionTool) -> TypeAdapter[Any] | None:
    """A type adapter of the tool's declared return type, if the function declares one."""
    try:
        function = tool.__wrapped__
    except AttributeError:
        return None
    annotation = inspect.signature(function, eval_str=True).return_annotation
    if annotation in (inspect.Signature.empty, Any, None, type(None)):
        return None
    return TypeAdapter(annotation)


def _schema_version(schema: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(schema))).hexdigest()[:16]


def tool_boundary(
    tool: FunctionTool,
    *,
    fields: FieldPolicy = _SEALED,
    output_schema: Mapping[str, Any] | None = None,
) -> BoundarySpec:
    """The TOOL boundary of one function tool: its arguments in, its output out, both
    sealed with ``fields``. The output's JSON Schema (what an intervention may change) is
    ``output_schema``, else the tool's ``output_json_schema``, else its return type's."""
    if output_schema is None:
        output_schema = tool.output_json_schema
    if output_schema is None:
        adapter = return_adapter(tool)
        output_schema = {} if adapter is None else adapter.json_schema(mode="serialization")
    return BoundarySpec(
        kind=StepKind.TOOL,
        name=tool.name,
        request={"arguments": fields},
        response={"output": fields},
        schema_id=f"openai-agents:function_tool:{tool.name}",
        schema_version=_schema_version(tool.params_json_schema),
        json_schema={"type": "object", "properties": {"output": dict(output_schema)}},
    )


def _arguments(text: str) -> Any:
    """The tool's arguments as JSON (the model's text when it is not JSON)."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {"$text": text}


@dataclasses.dataclass
class Routes:
    """What one run routes through ``ctx``."""

    ctx: Context
    tools: Mapping[str, tuple[BoundarySpec, TypeAdapter[Any] | None]]
    evidence: list[str] = dataclasses.field(default_factory=list)
    routed: dict[int, Agent[Any]] = dataclasses.field(default_factory=dict)
    # each MCP server object's routed replacement (``_mcp.RoutedMCPServer``), by id
    mcp_servers: dict[int, Any] = dataclasses.field(default_factory=dict)

    def tool(self, tool: FunctionTool) -> FunctionTool:
        if tool.name not in self.tools:
            raise ValueError("a function tool the agent spec does not declare")
        spec, adapter = self.tools[tool.name]
        original = tool.on_invoke_tool
        ctx, evidence = self.ctx, self.evidence

        async def invoke(tool_context: Any, arguments: str) -> Any:
            async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
                output = await original(tool_context, arguments)
                if adapter is not None and not isinstance(output, str):
                    return {"output": adapter.dump_python(output, mode="json")}
                return {"output": to_jsonable_python(output)}

            response = await ctx.acall(spec, {"arguments": _arguments(arguments)}, live=live)
            evidence.append(tool.name)
            output = response["output"]
            if adapter is not None and not isinstance(output, str):
                return adapter.validate_python(output)
            return output

        return dataclasses.replace(tool, on_invoke_tool=invoke)

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` (and of every agent it hands off to) whose function tools
        cross ``ctx``; one copy per agent, so handoff cycles close."""
        key = id(agent)
        if key in self.routed:
            return self.routed[key]
        clone = agent.clone()
        self.routed[key] = clone
        clone.tools = [self.tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
        clone.handoffs = [self.handoff(h) for h in agent.handoffs]
        clone.mcp_servers = [self.mcp_servers[id(s)] for s in agent.mcp_servers]
        return clone

    def handoff(self, target: Agent[Any] | Handoff[Any, Any]) -> Any:
        if isinstance(target, Agent):
            return self.agent(target)
        original = target.on_invoke_handoff

        async def invoke(run_context: Any, arguments: str) -> Any:
            return self.agent(await original(run_context, arguments))

        return dataclasses.replace(target, on_invoke_handoff=invoke)


def walk(roots: Sequence[Agent[Any]]) -> list[Agent[Any]]:
    """Every agent reachable from ``roots`` through handoffs given as agents."""
    seen: dict[int, Agent[Any]] = {}
    todo = list(roots)
    while todo:
        agent = todo.pop()
        if id(agent) in seen:
            continue
        seen[id(agent)] = agent
        todo.extend(h for h in agent.handoffs if isinstance(h, Agent))
    return list(seen.values())
