"""Frames between the supervisor and a worker, for code that speaks them directly.

For tests of the wire and of what crosses it (which frames a zygote is sent, what a
refused frame keeps): length-prefixed JSON over a stream socket, bounded by
``MAX_FRAME_BYTES``, read with a deadline; anything else raises :class:`FrameError`
(:class:`FrameTimeout`, :class:`PeerClosed`) holding nothing of the frame. A
``Sandbox`` and its handles send and read them for everyone else.
"""

from ._wire import (
    MAX_FRAME_BYTES,
    FrameError,
    FrameTimeout,
    PeerClosed,
    decode,
    encode,
    recv,
    send,
    send_with_fd,
)

__all__ = [
    "MAX_FRAME_BYTES",
    "FrameError",
    "FrameTimeout",
    "PeerClosed",
    "decode",
    "encode",
    "recv",
    "send",
    "send_with_fd",
]
