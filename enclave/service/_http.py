"""The HTTP/1.1 protocol ``serve`` runs: uvicorn's h11 protocol, with ``TCP_NODELAY`` on
every connection.

asyncio turns Nagle's algorithm off only on sockets created with ``IPPROTO_TCP``; the
listening socket uvicorn binds itself for ``--workers N`` has protocol 0, and so has
every connection it accepts. An answer goes out as two writes (head, then body), so the
body waited for the client's delayed ACK: about 40 ms added to every request of a
client that waits for each answer before its next (a sidebar, a worker asking for a
grant), however fast the route. h11 stays: it bounds a header block still arriving.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["NO_DELAY_PROTOCOL", "NoDelayH11Protocol"]

NO_DELAY_PROTOCOL = "enclave.service._http:NoDelayH11Protocol"


class NoDelayH11Protocol(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
