"""The worker side of a frame stream: send under a lock, or report a failure and end.

Used by the template process towards the supervisor and by each forked run towards the
template. ``fail`` never returns: it sends one ``contaminated`` frame (a reason code and
metadata only) and ends the process with that reason's exit status.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, NoReturn

from enclave.sandbox import _frames
from enclave.sandbox._limits import EXIT_CODES


def exception_name(exc: BaseException) -> list[str]:
    """The class of ``exc`` as [module, qualified name]: never its text."""
    cls = type(exc)
    return [str(cls.__module__), str(cls.__qualname__)]


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = _frames.encode(message)
        with self.lock:
            self.sock.sendall(data)

    def fail(self, reason: str, detail: Any) -> NoReturn:
        try:
            self.send({"type": "contaminated", "reason": reason, "detail": detail})
        finally:
            os._exit(EXIT_CODES[reason])
