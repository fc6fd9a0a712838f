"""The agents' MCP servers (``Agent.mcp_servers``): each crosses ``ctx`` through
``enclave.adapters.mcp``.

Each server is one MCP boundary named as the server (``server_boundary``). In the run's
copy of every agent, each ``agents.mcp.MCPServer`` is replaced by a ``RoutedMCPServer``:
an implementation of the SDK's own ``MCPServer`` interface (``list_tools``,
``call_tool``, prompts, resources) over an ``enclave.adapters.mcp.session`` to the same
server. At capture that session reaches the server the original would have reached (an
``MCPServerStdio``'s command, an ``MCPServerStreamableHttp``'s URL, or a target the spec
names); at replay it is served from the record and the original server object is never
connected: no subprocess starts, no connection opens.

What the SDK does with a server's answers (tool conversion, structured content,
approval, failure handling, guardrails) is unchanged: the routed server carries the
original's settings. A static tool filter is applied as the SDK applies it; a dynamic
one (a callable) is refused, since it runs agent code the record does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any, cast

from agents import Agent
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
from mcp import ClientSession
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceResult,
)
from mcp.types import Tool as MCPTool
from mcp_types import RequestParamsMeta

from ...capture import BoundarySpec, Context
from ..mcp import server_boundary, session

__all__ = ["RoutedMCPServer", "mcp_boundaries"]

MAX_PAGES = 100  # a listing that never ends cannot hang a run


def _target(server: MCPServer, targets: Mapping[str, Any]) -> Any:
    if server.name in targets:
        return targets[server.name]
    if isinstance(server, MCPServerStdio):
        return server.params
    if isinstance(server, MCPServerStreamableHttp):
        return str(server.params["url"])
    raise ValueError("an MCP server of this type needs a target (mcp_targets=...)")


def mcp_boundaries(
    agents: list[Agent[Any]],
    *,
    targets: Mapping[str, Any],
    schemas: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> dict[str, tuple[BoundarySpec, Any]]:
    """One boundary (and capture target) per MCP server of ``agents``, by server name."""
    out: dict[str, tuple[BoundarySpec, Any]] = {}
    for agent in agents:
        for server in agent.mcp_servers:
            name = server.name
            if not name or "/" in name or "#" in name:
                raise ValueError("an MCP server's name (name=...) may not hold '/' or '#'")
            if name in out:
                continue
            if callable(getattr(server, "tool_filter", None)):
                raise ValueError("a dynamic MCP tool filter runs agent code: not captured")
            spec = server_boundary(name, output_schemas=schemas.get(name))
            out[name] = (spec, _target(server, targets))
    return out


class RoutedMCPServer(MCPServer):
    """An SDK ``MCPServer`` whose every request crosses ``ctx`` (``connect`` opens the
    session, ``cleanup`` closes it; both in the run's own task)."""

    def __init__(self, original: MCPServer, ctx: Context, spec: BoundarySpec, target: Any) -> None:
        super().__init__(
            use_structured_content=original.use_structured_content,
            tool_meta_resolver=original.tool_meta_resolver,
            custom_data_extractor=original.custom_data_extractor,
            tool_input_guardrails=original.tool_input_guardrails,
            tool_output_guardrails=original.tool_output_guardrails,
        )
        # the approval and failure policies the original normalised from its
        # constructor's arguments: the SDK keeps them only in these fields
        self._needs_approval_policy = original._needs_approval_policy
        self._failure_error_function = original._failure_error_function
        self._name = original.name
        self._filter = getattr(original, "tool_filter", None)
        self._ctx, self._spec, self._target = ctx, spec, target
        self._stack = AsyncExitStack()
        self._session: ClientSession | None = None

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        self._session = await self._stack.enter_async_context(
            session(self._ctx, self._spec, self._target)
        )

    async def cleanup(self) -> None:
        self._session = None
        await self._stack.aclose()

    def _connected(self) -> ClientSession:
        if self._session is None:
            raise RuntimeError("the routed MCP server is not connected")
        return self._session

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[MCPTool]:
        client = self._connected()
        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page = await client.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return [tool for tool in tools if self._allowed(tool.name)]

    def _allowed(self, name: str) -> bool:
        rule = self._filter
        if not rule:
            return True
        allowed = rule.get("allowed_tool_names")
        blocked = rule.get("blocked_tool_names")
        return (allowed is None or name in allowed) and (blocked is None or name not in blocked)

    async def call_tool(
        self,
        tool_name: str,
        arguments: dict[str, Any] | None,
        meta: dict[str, Any] | None = None,
    ) -> CallToolResult:
        # ``_meta`` is an open map (a TypedDict with extra items): the SDK's dict as is
        request_meta = cast("RequestParamsMeta | None", meta)
        return await self._connected().call_tool(tool_name, arguments, meta=request_meta)

    async def list_prompts(self) -> ListPromptsResult:
        return await self._connected().list_prompts()

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> GetPromptResult:
        return await self._connected().get_prompt(name, arguments)

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return await self._connected().list_resources(params=params)

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return await self._connected().list_resource_templates(params=params)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self._connected().read_resource(uri)
