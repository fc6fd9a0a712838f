"""Frames between supervisor and worker: bounded, JSON objects only, deadline-aware."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enclave.sandbox import wire


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@settings(suppress_health_check=[HealthCheck.too_slow])  # generation is slow on a busy host
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_round_trip(message: dict[str, object]) -> None:
    a, b = socket.socketpair()
    with a, b:
        wire.send(a, message)
        assert wire.recv(b, deadline=time.monotonic() + 5) == message


def test_oversize_header_is_refused_before_reading(pair: tuple[socket.socket, ...]) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", wire.MAX_FRAME_BYTES + 1))
    with pytest.raises(wire.FrameError, match="oversize"):
        wire.recv(b, deadline=time.monotonic() + 5)


def test_custom_bound(pair: tuple[socket.socket, ...]) -> None:
    a, b = pair
    wire.send(a, {"x": "y" * 100})
    with pytest.raises(wire.FrameError):
        wire.recv(b, max_bytes=10)


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b'"text"', b"\xff\xfe"])
def test_non_object_bodies_are_refused(pair: tuple[socket.socket, ...], body: bytes) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", len(body)) + body)
    with pytest.raises(wire.FrameError):
        wire.recv(b, deadline=time.monotonic() + 5)


def test_truncated_frame_is_peer_closed(pair: tuple[socket.socket, ...]) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", 100) + b'{"partial"')
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(wire.PeerClosed):
        wire.recv(b, deadline=time.monotonic() + 5)


def test_dribbling_peer_cannot_extend_the_deadline(pair: tuple[socket.socket, ...]) -> None:
    a, b = pair
    a.sendall(struct.pack(">I", 100) + b"{")
    started = time.monotonic()
    with pytest.raises(wire.FrameTimeout):
        wire.recv(b, deadline=started + 0.2)
    assert time.monotonic() - started < 1.0


def test_encode_refuses_non_json() -> None:
    with pytest.raises(TypeError):
        wire.encode({"x": {1, 2}})


def test_a_refused_frame_links_to_no_error_holding_it() -> None:
    """What replayed code sent is in a decode error's ``doc``: the refusal must not keep
    that error, even as the ``__context__`` that ``from None`` only hides."""
    canary = "CANARY-frame-0b9c"
    with pytest.raises(wire.FrameError) as info:
        wire.decode(b'{"leak": "' + canary.encode())
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert canary not in str(info.value)
