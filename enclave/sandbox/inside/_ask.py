"""A run's one way to ask for what the record does not hold: an ``ask`` frame.

A run (a fork of the template, ``_template``) may send, over its own socket, ``{"type":
"ask", "body": {...}}`` and wait for ``{"type": "answer", "body": {...}}``. The template
relays the ask to the supervisor with the run's tag (its seed and arm, which the
template — not the run — knows), and the supervisor decides: it answers, or it ends the
worker as contaminated. The sandbox still has no network: the supervisor is the only
party that may reach an endpoint, under the audit's policy. What the run sends is
untrusted; the supervisor checks every field.
"""

from __future__ import annotations

from typing import Any

from enclave.sandbox import _wire
from enclave.sandbox.inside._channel import Channel

__all__ = ["AskRefused", "ask", "adopt"]

_channel: Channel | None = None


class AskRefused(Exception):
    """Not in a sandboxed run, or the answer was not a well-formed frame."""


def adopt(channel: Channel) -> None:
    """In a run's process, before agent code: asks go over ``channel``."""
    global _channel
    _channel = channel


def ask(body: dict[str, Any]) -> dict[str, Any]:
    """Ask the supervisor through the template; its answer's body."""
    channel = _channel
    if channel is None:
        raise AskRefused("asking needs a sandboxed run")
    with channel.lock:  # the tripwire reports on this socket too
        channel.sock.sendall(_wire.encode({"type": "ask", "body": body}))
        try:
            answer = _wire.recv(channel.sock)
        except _wire.FrameError:
            raise AskRefused("no answer") from None
    if answer.get("type") != "answer" or not isinstance(answer.get("body"), dict):
        raise AskRefused("no answer")
    body_: dict[str, Any] = answer["body"]
    return body_
