"""The worker side of a frame stream: send under a lock, or report a failure and end.

Used by the template process towards the supervisor and by each forked run towards the
template. ``fail`` never returns: it sends one ``contaminated`` frame (a reason code and
metadata only) and ends the process with that reason's exit status.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from enclave.sandbox import _wire
from enclave.sandbox._wire import EXIT_CODES, HANDLER_ERROR, MEMORY_LIMIT


def exception_name(exc: BaseException) -> list[str]:
    """The class of ``exc`` as [module, qualified name]: never its text."""
    cls = type(exc)
    return [str(cls.__module__), str(cls.__qualname__)]


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = _wire.encode(message)
        with self.lock:
            self.sock.sendall(data)

    def reply(
        self, call: Callable[[], Any], frame: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        """Send ``frame(call())``; whatever ``call`` (agent code) raises, or a result that
        is no dict or cannot be framed, ends the process with a closed reason instead."""
        try:
            result = call()
        except MemoryError:
            self.fail(MEMORY_LIMIT, "MemoryError")
        except BaseException as exc:  # noqa: BLE001 - agent code may raise anything
            self.fail(HANDLER_ERROR, exception_name(exc))
        try:
            if not isinstance(result, dict):
                raise TypeError("a non-dict result")
            data = _wire.encode(frame(result))
        except MemoryError:
            self.fail(MEMORY_LIMIT, "MemoryError")
        except Exception:  # noqa: BLE001 - unserializable, non-dict or oversize reply
            self.fail(HANDLER_ERROR, ["enclave.sandbox", "BadReply"])
        with self.lock:
            self.sock.sendall(data)

    def fail(self, reason: str, detail: Any) -> NoReturn:
        try:
            self.send({"type": "contaminated", "reason": reason, "detail": detail})
        finally:
            os._exit(EXIT_CODES[reason])
