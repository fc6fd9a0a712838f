"""Tools: one TOOL boundary each, and the run's copy of the graph whose tool nodes
cross ``ctx``.

A compiled graph keeps its ``ToolNode`` s as the ``bound`` runnable of their nodes
(``Pregel.nodes``). ``route_tools`` makes the run's copy of the graph
(``Pregel.copy``, ``PregelNode.copy``: the framework's own copy methods) in which each
tool node is a ``ToolNode`` over the same tools with an ``awrap_tool_call`` — the
documented hook for intercepting one tool execution — that sends the execution through
``ctx.acall``. The agent's graph is never changed. The wrapper sits innermost: the
agent's own tool middleware (``create_agent``'s composed ``awrap_tool_call``) runs
around it, as agent code, at capture and replay alike.

Request ``{"args"}`` (the call's arguments, as the model proposed them), response the
``ToolMessage`` (``_codec.encode_tool_message``). The call's id is no part of the key: a
batch's calls are told apart by the order they start in (the engine's call ids), and
the answer is always given the id of the call it answers.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pydantic
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.pregel import Pregel

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy
from .._schemas import inline_refs, schema_version
from ._codec import decode_tool_message, encode_tool_message

__all__ = ["Tool", "check_tool_node", "route_tools", "tool_nodes"]

Execute = Callable[[ToolCallRequest], Awaitable[Any]]
AsyncWrapper = Callable[[ToolCallRequest, Execute], Awaitable[Any]]


def tool_nodes(graph: Pregel[Any, Any, Any, Any]) -> dict[str, ToolNode]:
    """The graph's tool nodes by node name."""
    return {
        name: node.bound for name, node in graph.nodes.items() if isinstance(node.bound, ToolNode)
    }


def _output_schema(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema of what the tool returns, as far as its function declares it."""
    function = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
    if function is None:
        return {}
    returns = typing.get_type_hints(function).get("return")
    if returns is None or returns is Any:
        return {}
    return inline_refs(pydantic.TypeAdapter(returns).json_schema())


class Tool:
    """One tool as a boundary: its spec and the schema of its arguments."""

    def __init__(self, tool: BaseTool, rule: FieldPolicy, *, retrieval: bool = False) -> None:
        # the arguments' schema the model is shown (the framework's own conversion)
        self.parameters = inline_refs(convert_to_openai_tool(tool)["function"]["parameters"])
        self.spec = BoundarySpec(
            kind=StepKind.RETRIEVAL if retrieval else StepKind.TOOL,
            name=tool.name,
            request={"args": rule},
            response={"output": rule, "form": rule, "status": rule, "artifact": rule},
            schema_id=f"langchain-tool:{tool.name}",
            schema_version=schema_version(self.parameters),
            json_schema={"type": "object", "properties": {"output": _output_schema(tool)}},
        )


def _default_errors() -> Any:
    return ToolNode([])._handle_tool_errors


def _settings(node: ToolNode) -> tuple[Any, AsyncWrapper | None]:
    """What a tool node was built with besides its tools: its error handling and its
    asynchronous wrapper (the agent's tool middleware). The framework stores its
    constructor's arguments as they were given; read, never changed."""
    errors = node._handle_tool_errors
    if errors is not _default_errors():
        # a catch-all handler would turn a replay's refusal (a call the record lacks, a
        # live call) into a tool message the model reads: the branch must end instead
        raise ValueError("a ToolNode with its own handle_tool_errors is not routed")
    wrapper = node._awrap_tool_call
    if wrapper is None and node._wrap_tool_call is not None:
        raise ValueError("a ToolNode with only a synchronous tool wrapper is not routed")
    if node._messages_key != "messages":
        raise ValueError("a ToolNode with another messages key is not routed")
    return errors, wrapper


def check_tool_node(node: ToolNode) -> None:
    """Raise ``ValueError`` unless the node can be routed through ``ctx``."""
    _settings(node)


def route_tools(
    graph: Pregel[Any, Any, Any, Any], ctx: Context, tools: Mapping[str, Tool], called: list[str]
) -> Any:
    """The run's copy of ``graph``: every tool execution through ``ctx.acall``."""

    async def crossing(request: ToolCallRequest, execute: Execute) -> Any:
        call = request.tool_call
        tool = tools.get(call["name"])
        if tool is None:
            raise ValueError("a tool the agent spec does not declare was called")

        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            result = await execute(request)
            if not isinstance(result, ToolMessage):
                raise ValueError("a tool that answers with a Command is not recorded")
            return encode_tool_message(result)

        called.append(call["name"])
        args = json.loads(json.dumps(call["args"]))
        answer = await ctx.acall(tool.spec, {"args": args}, live=live)
        return decode_tool_message(answer, name=call["name"], tool_call_id=str(call["id"]))

    nodes = dict(graph.nodes)
    for name, node in tool_nodes(graph).items():
        _errors, inner = _settings(node)
        wrapper: AsyncWrapper = crossing if inner is None else _outside(inner, crossing)
        routed = ToolNode(
            list(node.tools_by_name.values()),
            name=node.name or "tools",
            tags=list(node.tags or ()),
            awrap_tool_call=wrapper,
        )
        nodes[name] = nodes[name].copy({"bound": routed})
    return graph.copy({"nodes": nodes})


def _outside(outer: AsyncWrapper, inner: AsyncWrapper) -> AsyncWrapper:
    """``outer`` (the agent's middleware) around ``inner`` (the crossing)."""

    async def composed(request: ToolCallRequest, execute: Execute) -> Any:
        async def through(req: ToolCallRequest) -> Any:
            return await inner(req, execute)

        return await outer(request, through)

    return composed
