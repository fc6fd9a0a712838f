"""The two dispatchers a ``ClientSession`` runs on: one records, one serves the record.

``mcp.ClientSession(dispatcher=D)`` sends every request through
``D.send_raw_request(method, params, opts)`` and every client notification through
``D.notify(method, params, opts)`` (``mcp.shared.dispatcher.Outbound``). Both cross the
run's ``ctx`` here, in the order the session issues them, hidden ones included (the
``tools/list`` a ``call_tool`` sends to validate its output schema, the handshake):

* ``RecordingDispatcher`` wraps the real dispatcher of a connected transport: each call
  is sent live through ``ctx.acall`` and recorded.
* ``ReplayDispatcher`` has no transport at all: each call is answered by ``ctx.acall``
  from the record, and its receive loop only waits to be cancelled.

Invariants:

1. What the session is handed is the decoded record, at capture as at replay.
2. Inbound traffic is the same in both: none. At capture inbound server requests
   (sampling, elicitation, roots) are refused with a JSON-RPC error and inbound
   notifications (logging, progress, list changes) are dropped, because a replay has no
   server to send them; progress callbacks are not handed to the transport.
3. Transport hints (``opts``: timeout, headers, request ids) are never part of a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
from mcp.shared.dispatcher import CallOptions, Dispatcher, OnNotify, OnNotifyIntercept, OnRequest
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from ...capture import BoundarySpec, Context
from ._wire import decode_answer, encode_error, mcp_request

__all__ = ["RecordingDispatcher", "ReplayDispatcher"]

_NOTIFIED: Mapping[str, Any] = {"result": {}}  # a notification's answer: it has none


async def _refuse_inbound(_ctx: Any, _method: str, _params: Mapping[str, Any] | None) -> Any:
    raise MCPError(METHOD_NOT_FOUND, "server-to-client requests are not captured")


async def _drop(_ctx: Any, _method: str, _params: Mapping[str, Any] | None) -> None:
    return None


def _consume(_method: str, _params: Mapping[str, Any] | None) -> bool:
    return True  # every inbound notification is consumed here: the session never sees it


class _Routed:
    def __init__(self, ctx: Context, spec: BoundarySpec) -> None:
        self._ctx = ctx
        self._spec = spec

    async def _send(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions) -> Any:
        raise NotImplementedError

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
    ) -> dict[str, Any]:
        live_opts: CallOptions = {k: v for k, v in (opts or {}).items() if k != "on_progress"}  # type: ignore[assignment]

        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            try:
                return {"result": await self._send(method, params, live_opts)}
            except MCPError as exc:
                return encode_error(exc)

        answer = await self._ctx.acall(self._spec, mcp_request(method, params), live=live)
        return decode_answer(answer)

    async def notify(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        opts: CallOptions | None = None,
    ) -> None:
        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            await self._notify(method, params, opts)
            return _NOTIFIED

        await self._ctx.acall(self._spec, mcp_request(method, params), live=live)

    async def _notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None
    ) -> None:
        raise NotImplementedError


class RecordingDispatcher(_Routed):
    """The real dispatcher of a connected server, with every outbound call recorded."""

    def __init__(self, ctx: Context, spec: BoundarySpec, inner: Dispatcher[Any]) -> None:
        if ctx.serves_record:
            raise ValueError("a replay serves MCP from the record: use ReplayDispatcher")
        super().__init__(ctx, spec)
        self._inner = inner

    async def _send(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions) -> Any:
        return await self._inner.send_raw_request(method, params, opts)

    async def _notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None
    ) -> None:
        await self._inner.notify(method, params, opts)

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        # the session's own handlers are not given the server's inbound traffic: a
        # replay has none to give them (invariant 2)
        await self._inner.run(_refuse_inbound, _drop, _consume, task_status=task_status)


class ReplayDispatcher(_Routed):
    """A dispatcher with no transport: every call is served from the record."""

    def __init__(self, ctx: Context, spec: BoundarySpec) -> None:
        if not ctx.serves_record:
            raise ValueError("a capture reaches a real server: use RecordingDispatcher")
        super().__init__(ctx, spec)

    async def _send(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions) -> Any:
        raise AssertionError("a replay never sends")  # ``ctx.acall`` serves it

    async def _notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None
    ) -> None:
        raise AssertionError("a replay never sends")

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        task_status.started()
        await anyio.sleep_forever()  # nothing ever arrives: the session cancels this
