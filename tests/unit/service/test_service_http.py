"""``serve``'s connections have Nagle's algorithm off, also on the listening socket
uvicorn binds itself for ``--workers N`` (protocol 0, which asyncio leaves alone)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from enclave.service import NO_DELAY_PROTOCOL


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def _server(http: str) -> Iterator[tuple[uvicorn.Server, int]]:
    config = uvicorn.Config(_app, host="127.0.0.1", port=0, http=http, log_config=None)
    sock = config.bind_socket()  # as uvicorn binds it for --workers N
    assert sock.proto == 0
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield server, sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _accepted_no_delay(server: uvicorn.Server) -> list[int]:
    return [
        conn.transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        for conn in server.server_state.connections
    ]


@pytest.mark.parametrize(("http", "expected"), [(NO_DELAY_PROTOCOL, True), ("h11", False)])
def test_accepted_connections_have_nagle_off(http: str, expected: bool) -> None:
    with _server(http) as (server, port), httpx.Client() as client:
        assert client.get(f"http://127.0.0.1:{port}/").text == "ok"
        flags = _accepted_no_delay(server)
        assert flags and all(bool(flag) is expected for flag in flags)
