"""``session``: an initialised ``mcp.ClientSession`` whose every request crosses ``ctx``.

At capture the session runs on a ``RecordingDispatcher`` over a real connection:

* an in-process ``MCPServer`` or low-level ``Server``: the SDK's direct dispatcher pair
  (``create_direct_dispatcher_pair``) with the server's modern per-request handler
  (``modern_on_request``) and its lifespan, as ``mcp.Client(server)`` connects it;
* ``StdioServerParameters``: the server's subprocess over ``stdio_client``;
* a URL: ``streamable_http_client``;

both stream transports under the SDK's ``JSONRPCDispatcher``. At replay the session runs
on a ``ReplayDispatcher`` and the server argument is never touched: no process starts,
no connection opens, an in-process server is never called.

The handshake is the SDK's (``discover()``, falling back to ``initialize()`` on a legacy
server), recorded and served like any other request. There is no response cache (the
high-level ``mcp.Client`` caches list results against the wall clock), so which requests
a run sends never depends on timing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.server.runner import modern_on_request
from mcp.shared.direct_dispatcher import create_direct_dispatcher_pair
from mcp.shared.dispatcher import Dispatcher
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import Implementation

from ...capture import BoundarySpec, Context, suspended
from ._dispatch import RecordingDispatcher, ReplayDispatcher

__all__ = ["CLIENT_INFO", "MCPServerLike", "session"]

# what the client calls itself: pinned, so no package upgrade changes a recorded request
CLIENT_INFO = Implementation(name="replay-enclave", version="1")

MCPServerLike = MCPServer | Server[Any] | StdioServerParameters | str


def _lowlevel(server: MCPServer | Server[Any]) -> Server[Any]:
    if isinstance(server, Server):
        return server
    # MCPServer keeps its low-level server in this attribute and exposes no accessor
    # (mcp 2.3.0): the SDK's own ``Client`` reads it the same way to connect in process
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


async def _no_notifications(_ctx: Any, _method: str, _params: Mapping[str, Any] | None) -> None:
    return None


async def _connect(stack: AsyncExitStack, server: MCPServerLike) -> Dispatcher[Any]:
    """A live dispatcher to ``server``, its resources entered on ``stack``."""
    if isinstance(server, MCPServer | Server):
        lowlevel = _lowlevel(server)
        state = await stack.enter_async_context(lowlevel.lifespan(lowlevel))
        client_side, server_side = create_direct_dispatcher_pair()
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(server_side.close)
        await group.start(server_side.run, modern_on_request(lowlevel, state), _no_notifications)
        return client_side
    if isinstance(server, StdioServerParameters):
        read, write = await stack.enter_async_context(stdio_client(server))
    elif isinstance(server, str):
        read, write = await stack.enter_async_context(streamable_http_client(server))
    else:
        raise TypeError("an MCP server is an MCPServer, a Server, StdioServerParameters or a URL")
    return JSONRPCDispatcher(read, write)


async def _handshake(client: ClientSession) -> None:
    try:
        await client.discover()
    except MCPError:
        await client.initialize()  # a legacy server: the initialize handshake


@asynccontextmanager
async def session(
    ctx: Context,
    spec: BoundarySpec,
    server: MCPServerLike,
    *,
    read_timeout_seconds: float | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialised ``ClientSession`` to ``server`` whose requests cross the boundary
    ``spec`` (``server_boundary``): recorded live at capture, served from the record at
    replay, where ``server`` is never started or called. Use it as the SDK's session:
    ``await s.call_tool(name, arguments)``, ``list_tools()``, ``read_resource(uri)``...

    Server-to-client requests (sampling, elicitation, roots) are refused at capture and
    server notifications are dropped (``docs/adapters/mcp.md``)."""
    async with AsyncExitStack() as stack:
        dispatcher: RecordingDispatcher | ReplayDispatcher
        if ctx.serves_record:
            dispatcher = ReplayDispatcher(ctx, spec)
        else:
            # connecting (a subprocess's environment, the transport's tasks, an
            # in-process server's lifespan) is the live server's work, not the agent's:
            # a replay never does it, so none of it is the run's ambient input
            with suspended():
                inner = await _connect(stack, server)
            dispatcher = RecordingDispatcher(ctx, spec, inner)
        client = ClientSession(
            dispatcher=dispatcher,
            client_info=CLIENT_INFO,
            read_timeout_seconds=read_timeout_seconds,
        )
        await stack.enter_async_context(client)
        await _handshake(client)
        yield client
