"""The wire between the supervisor and the worker: everything both sides must agree on.

It is imported on both sides of the sandbox wall, so it imports nothing of either:

1. Frames: length-prefixed JSON over a stream socket. A frame is a 4-byte big-endian
   length followed by that many bytes of JSON (orjson). Nothing is ever pickled: the
   peer may be hostile, so the reader bounds the length before allocating and reports
   malformed input as :class:`FrameError`.
2. The stable reason codes a worker is stopped for, and the exit statuses by which a
   worker that ends itself names one.
3. :class:`SandboxLimits`, sent to the worker in its configuration and applied there.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

import orjson

from ledger import raise_unchained

MAX_FRAME_BYTES = 64 << 20
_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """The peer sent something that is not a well-formed, bounded frame."""


class PeerClosed(FrameError):
    """The peer closed the stream (cleanly, at a frame boundary or not)."""


def encode(message: dict[str, Any]) -> bytes:
    """Serialize one message into a frame (header + JSON body)."""
    body = orjson.dumps(message)
    if len(body) > MAX_FRAME_BYTES:
        raise ValueError("frame too large")
    return _HEADER.pack(len(body)) + body


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode(message))


class FrameTimeout(FrameError):
    """The deadline passed before a whole frame arrived."""


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FrameTimeout("deadline passed")
            sock.settimeout(remaining)
        try:
            n = sock.recv_into(view[got:], size - got)
        except TimeoutError as exc:
            raise FrameTimeout("deadline passed") from exc
        if n == 0:
            raise PeerClosed("peer closed the stream")
        got += n
    return bytes(buf)


def recv(
    sock: socket.socket,
    *,
    deadline: float | None = None,
    max_bytes: int = MAX_FRAME_BYTES,
) -> dict[str, Any]:
    """Read one frame before ``deadline`` (a ``time.monotonic()`` value, or None
    to wait as long as it takes); the message must be a JSON object."""
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if size > max_bytes:
        raise FrameError("oversize frame")
    return decode(_recv_exact(sock, size, deadline))


def decode(body: bytes) -> dict[str, Any]:
    """One frame's body as a JSON object, or ``FrameError`` holding nothing of it."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:  # its ``doc`` is the frame: what replayed code sent
        raise_unchained(FrameError("frame is not JSON"))
    if not isinstance(message, dict):
        raise FrameError("frame is not a JSON object")
    return message


def send_with_fd(sock: socket.socket, message: dict[str, Any], fd: int) -> None:
    """Send one frame together with one descriptor (SCM_RIGHTS) in a single message."""
    data = encode(message)
    sent = socket.send_fds(sock, [data], [fd])
    if sent != len(data):
        sock.sendall(data[sent:])


def recv_with_fds(
    sock: socket.socket, *, max_fds: int = 1, max_bytes: int = 1 << 16
) -> tuple[dict[str, Any], list[int]]:
    """Read one frame and the descriptors that came with its first byte (at most
    ``max_fds``; more, or a truncated control message, is a :class:`FrameError` and
    every descriptor received is closed)."""
    data, fds, flags, _ = socket.recv_fds(sock, max_bytes, max_fds)
    try:
        if not data:
            raise PeerClosed("peer closed the stream")
        if flags & socket.MSG_CTRUNC:
            raise FrameError("too many descriptors")
        while len(data) < _HEADER.size:
            more = sock.recv(_HEADER.size - len(data))
            if not more:
                raise PeerClosed("peer closed the stream")
            data += more
        (size,) = _HEADER.unpack(data[: _HEADER.size])
        if size > max_bytes:
            raise FrameError("oversize frame")
        body = data[_HEADER.size :]
        if len(body) > size:
            raise FrameError("more than one frame")
        body += _recv_exact(sock, size - len(body), None)
        message = decode(body)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return message, fds


# -- reason codes ------------------------------------------------------------------------

NETWORK = "network"
PROCESS_SPAWN = "process_spawn"
WRITE_OUTSIDE_SCRATCH = "write_outside_scratch"
NATIVE_CODE = "native_code"
FORBIDDEN_OPERATION = "forbidden_operation"
MEMORY_LIMIT = "memory_limit"
CPU_LIMIT = "cpu_limit"
FILE_SIZE_LIMIT = "file_size_limit"
WALL_CLOCK_TIMEOUT = "wall_clock_timeout"
WORKER_CRASHED = "worker_crashed"
HANDLER_ERROR = "handler_error"

REASONS: frozenset[str] = frozenset(
    {
        NETWORK,
        PROCESS_SPAWN,
        WRITE_OUTSIDE_SCRATCH,
        NATIVE_CODE,
        FORBIDDEN_OPERATION,
        MEMORY_LIMIT,
        CPU_LIMIT,
        FILE_SIZE_LIMIT,
        WALL_CLOCK_TIMEOUT,
        WORKER_CRASHED,
        HANDLER_ERROR,
    }
)

# Exit statuses the worker uses when it ends itself on purpose. They stay below
# 128 so that they cannot be confused with "killed by signal N" (128 + N).
EXIT_CODES: dict[str, int] = {
    NETWORK: 70,
    PROCESS_SPAWN: 71,
    WRITE_OUTSIDE_SCRATCH: 72,
    NATIVE_CODE: 73,
    FORBIDDEN_OPERATION: 74,
    MEMORY_LIMIT: 75,
    HANDLER_ERROR: 76,
    WORKER_CRASHED: 77,
}
REASON_BY_EXIT_CODE: dict[int, str] = {code: reason for reason, code in EXIT_CODES.items()}


# -- limits ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to one worker process.

    ``cpu_seconds`` is the CPU budget of the worker over its whole life (one replay
    job), enforced by RLIMIT_CPU; ``wall_seconds`` bounds each call, enforced by
    the supervisor killing the worker's whole process tree; ``scratch_bytes`` caps the
    worker's scratch tmpfs (bubblewrap ``--size``) on top of RLIMIT_FSIZE per file.
    """

    memory_bytes: int = 1 << 30
    cpu_seconds: int = 60
    file_size_bytes: int = 64 << 20
    open_files: int = 256
    wall_seconds: float = 60.0
    scratch_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "cpu_seconds",
            "file_size_bytes",
            "open_files",
            "scratch_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be a positive integer")
        if self.open_files < 16:
            raise ValueError("SandboxLimits.open_files must be at least 16")
        wall = self.wall_seconds
        if isinstance(wall, bool) or not isinstance(wall, int | float):
            raise ValueError("SandboxLimits.wall_seconds must be a positive number")
        if not math.isfinite(wall) or wall <= 0:
            raise ValueError("SandboxLimits.wall_seconds must be a positive number")

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": self.cpu_seconds,
            "file_size_bytes": self.file_size_bytes,
            "open_files": self.open_files,
            "wall_seconds": float(self.wall_seconds),
            "scratch_bytes": self.scratch_bytes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxLimits:
        expected = {
            "memory_bytes",
            "cpu_seconds",
            "file_size_bytes",
            "open_files",
            "wall_seconds",
            "scratch_bytes",
        }
        if not isinstance(data, dict) or set(data) != expected:
            raise ValueError("SandboxLimits: unexpected fields")
        return cls(**data)
