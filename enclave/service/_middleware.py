"""The outermost guard: an access log line per request and a last-resort 500.

The log line carries the method, the *route template* (``/api/v1/specimens/{specimen_id}``,
never the raw path or query, which are input), the status and the duration. An
exception that escaped every handler is logged by type name only and answered with
the standard error body; its text and traceback go nowhere.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["GuardMiddleware"]

log = logging.getLogger("enclave.service")

_INTERNAL = b'{"error":{"code":"internal","message":"the service failed; the failure was logged"}}'


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _method(scope: Scope) -> str:
    method = scope.get("method")
    return method if method in _METHODS else "OTHER"


def _route(scope: Scope) -> str:
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(unrouted)"


class GuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = {"code": 500, "sent": False}

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"], status["sent"] = message["status"], True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:  # noqa: BLE001 - the edge: type name only, no text
            log.error("unhandled failure type=%s route=%s", type(exc).__name__, _route(scope))
            if not status["sent"]:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 500,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(_INTERNAL)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _INTERNAL})
            status["code"] = 500
        finally:
            log.info(
                "%s %s -> %s in %.1f ms",
                _method(scope),
                _route(scope),
                status["code"],
                (time.monotonic() - started) * 1000,
            )
