"""A loopback TCP listener in the host's network namespace: replayed code that reaches
it has gone live. ``listener()`` opens one; ``accepted()`` counts and closes what
reached it since the last count."""

from __future__ import annotations

import socket


def listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    return sock


def accepted(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1
