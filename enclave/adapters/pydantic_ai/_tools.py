"""Function tools: one TOOL boundary each, crossed through a capability of the run.

``function_tools`` derives a boundary from every function tool of the agent (any other
toolset is refused: its crossings are the agent author's to declare). ``ToolBoundaries``
is the capability passed per run (``capabilities=[...]``): its ``wrap_tool_execute``,
the framework's hook around one tool execution, sends the execution through
``ctx.acall``. Request ``{"args"}`` (the validated arguments), response ``{"output"}``
(the return value as JSON, rebuilt with the tool's return annotation). Output tools
never reach this hook: they are the model's answer, not a crossing.
"""

from __future__ import annotations

import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pydantic
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy
from .._schemas import inline_refs, schema_version
from ._codec import jsonable

__all__ = ["Tool", "ToolBoundaries", "function_tools"]


class Tool:
    """One function tool as a boundary: its spec and its return value's codec."""

    def __init__(self, tool: Any, rule: FieldPolicy) -> None:
        definition: ToolDefinition = tool.tool_def
        hints = typing.get_type_hints(tool.function_schema.function)
        returns = hints.get("return", Any)
        self.codec: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(returns)
        output = inline_refs(self.codec.json_schema(mode="serialization"))
        self.spec = BoundarySpec(
            kind=StepKind.TOOL,
            name=definition.name,
            request={"args": rule},
            response={"output": rule},
            schema_id=f"pydantic-ai-tool:{definition.name}",
            schema_version=schema_version(definition.parameters_json_schema),
            json_schema={"type": "object", "properties": {"output": output}},
        )
        self.parameters = inline_refs(definition.parameters_json_schema)


def function_tools(agent: Agent[Any, Any], rule: FieldPolicy) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for toolset in agent.toolsets:
        if not isinstance(toolset, FunctionToolset):
            raise ValueError(
                "only function tools are derived: declare other toolsets' boundaries yourself"
            )
        for tool in toolset.tools.values():
            tools[tool.name] = Tool(tool, rule)
    return tools


class ToolBoundaries(AbstractCapability[Any]):
    """Every function tool's execution through ``ctx.acall`` (one run's capability)."""

    def __init__(self, ctx: Context, tools: Mapping[str, Tool]) -> None:
        super().__init__()
        self._ctx = ctx
        self._tools = tools
        self.called: list[str] = []

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        tool = self._tools.get(tool_def.name)
        if tool is None:
            raise ValueError("a tool the agent spec does not declare was called")

        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            result = await handler(args)
            return {"output": jsonable(tool.codec.dump_python(result, by_alias=True))}

        self.called.append(tool_def.name)
        answer = await self._ctx.acall(tool.spec, {"args": jsonable(args)}, live=live)
        return tool.codec.validate_python(answer["output"])
