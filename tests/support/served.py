"""``replay-enclave serve`` as a real process on a free local port, for tests that need
the service over HTTP (workers in other processes, the grant plane, hardening)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["free_port", "listening", "serving"]

_MAIN = "from enclave.cli import main; main()"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(home: Path, env: Mapping[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The service on ``home`` with exactly ``env``, once it accepts connections; stopped
    (SIGTERM) on exit."""
    port = free_port()
    args = [_MAIN, "serve", "--home", str(home), "--port", str(port)]
    with listening(args, port, env) as process:
        yield process, port


@contextmanager
def listening(
    args: list[str], port: int, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -c ARGS...`` (a server told to listen on ``port``), once it accepts
    connections there; stopped (SIGTERM) on exit."""
    process = subprocess.Popen(
        [sys.executable, "-c", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=None if env is None else dict(env),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "the server exited"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
