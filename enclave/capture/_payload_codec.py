"""How a payload field's plaintext is sealed: the value exactly as the agent produced it.

Canonical JSON (RFC 8785) is for digests: it sorts object keys and writes an integral
float as an integer, so parsing it back gives the agent ``1`` where it saw ``1.0`` and
re-ordered objects — a deterministic agent could take another branch at replay. The
sealed form keeps both: JSON text in insertion order with every float written as a
float (``1.0``), after one version byte (``0x01``) that no JSON text can begin with.
Blobs without it were sealed before and are canonical JSON, parsed as before.

The value's digest is still taken over its canonical bytes (``_recorder``); only values
that canonicalise are encoded here, so the ranges (I-JSON integers, finite floats, valid
Unicode) are the canonical form's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ledger import CanonicalizationError, loads, raise_unchained

__all__ = ["PAYLOAD_V1", "decode_payload", "encode_payload"]

PAYLOAD_V1 = b"\x01"  # JSON text never starts with a control byte


def _plain(value: Any) -> Any:
    """Built-in types only, order kept (orjson refuses other mappings, enums pass as-is)."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_plain(v) for v in value]
    raise CanonicalizationError(f"type {type(value).__name__} has no JSON form")


def encode_payload(value: Any) -> bytes:
    """The sealed plaintext of one field value (call only on canonicalisable values:
    orjson would also write a datetime or a dataclass, which canonical JSON refuses)."""
    try:
        return PAYLOAD_V1 + orjson.dumps(value)  # built-in types: written as they are
    except orjson.JSONEncodeError:
        pass  # another Mapping or Sequence type: copy into built-ins first
    try:
        return PAYLOAD_V1 + orjson.dumps(_plain(value))
    except (orjson.JSONEncodeError, RecursionError):
        raise_unchained(CanonicalizationError("value has no JSON form"))


def decode_payload(data: bytes) -> Any:
    """A field value as sealed: ``encode_payload`` output, or an older canonical blob."""
    if not data.startswith(PAYLOAD_V1):
        return loads(data)
    try:
        return orjson.loads(data[len(PAYLOAD_V1) :])
    except orjson.JSONDecodeError:  # its ``doc`` is the whole input
        raise_unchained(CanonicalizationError("stored payload is not valid JSON"))
