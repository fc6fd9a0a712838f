"""The request gate: who is asking is settled before a byte of the body is read, and no
request may make the service hold more than a bounded amount of it.

In order, for every HTTP request:

1. headers larger than ``Limits.max_header_bytes`` in total: 431 ``headers_too_large``;
2. under ``/api/v1``: the bearer token must name an enabled analyst, else 401
   ``unauthenticated`` — the body is still unread, so a stranger's upload costs only
   the socket buffer. The analyst is handed to the routes in the request's state;
3. a ``Content-Length`` above ``Limits.max_body_bytes``: 413 ``too_large`` at once,
   unread; a body without one (chunked) is read while it streams and refused as soon
   as it passes the limit. What is kept is at most the limit, replayed to the route.

Answers are the standard error body and never echo the request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ledger import LedgerError

from .._errors import EnclaveError
from ..governance import authenticate
from ._state import ServiceState

__all__ = ["ANALYST_KEY", "Limits", "RequestGate"]

ANALYST_KEY = "enclave.analyst"


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Request bounds. The defaults fit every body the API takes many times over."""

    max_body_bytes: int = 64 * 1024
    max_header_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_header_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 2**30:
                raise ValueError(f"{name} must be an integer in 1024..2**30")


class _TooLarge(Exception):
    pass


async def _answer(
    send: Send, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        # the rest of the request is not read: the connection cannot carry another
        (b"connection", b"close"),
    ]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


def _bearer(scope: Scope) -> str | None:
    raw = _header(scope, b"authorization")
    if raw is None:
        return None
    scheme, _, token = raw.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class RequestGate:
    def __init__(self, app: ASGIApp, *, state: ServiceState, limits: Limits, prefix: str) -> None:
        self.app, self.state, self.limits, self.prefix = app, state, limits, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # 1.
        size = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", []))
        if size > self.limits.max_header_bytes:
            await _answer(send, 431, "headers_too_large", "the request headers are too large")
            return
        # 2.
        path = str(scope.get("path", ""))
        if path == self.prefix or path.startswith(self.prefix + "/"):
            analyst = await self._authenticate(scope, send)
            if analyst is None:
                return
            scope.setdefault("state", {})[ANALYST_KEY] = analyst
        # 3.
        length = _header(scope, b"content-length")
        if length is not None:
            if not length.isdigit() or len(length) > 18:
                await _answer(send, 400, "bad_request", "the Content-Length is malformed")
                return
            if int(length) > self.limits.max_body_bytes:
                await _answer(send, 413, "too_large", "the request body is too large")
                return
        try:
            body = await self._read_body(receive)
        except _TooLarge:
            await _answer(send, 413, "too_large", "the request body is too large")
            return
        await self.app(scope, _replay(body, receive), send)

    async def _authenticate(self, scope: Scope, send: Send) -> Any:
        token = _bearer(scope)
        try:
            analyst = (
                None
                if token is None
                else await run_in_threadpool(lambda: authenticate(self.state.runtime, token))
            )
        except (EnclaveError, LedgerError):
            await _answer(send, 503, "unavailable", "the service's ledger is not available")
            return None
        if analyst is None:
            await _answer(
                send,
                401,
                "unauthenticated",
                "a valid bearer token is required",
                {"WWW-Authenticate": "Bearer"},
            )
        return analyst

    async def _read_body(self, receive: Receive) -> Message:
        """The whole body as one message, or ``_TooLarge`` as soon as it passes the limit."""
        parts: list[bytes] = []
        held = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return message  # the client left: pass that on
            chunk = message.get("body", b"")
            held += len(chunk)
            if held > self.limits.max_body_bytes:
                raise _TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(parts), "more_body": False}


def _replay(first: Message, receive: Receive) -> Receive:
    pending = [first]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
