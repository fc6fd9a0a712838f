"""JSON Pointers (RFC 6901) into a call's response, its schema and its leaves.

A pointer names one member path of nested objects: ``/limits/daily``; ``~1`` stands for
``/`` and ``~0`` for ``~`` inside a key. Arrays are leaves (an index is not a target).
Leaves are what the proof of change compares one by one: every non-empty object is
split into its members, everything else (a scalar, an array, an empty object, the mark
of a withheld field) is one leaf.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["is_pointer", "join_pointer", "leaves_of", "parse_pointer", "schema_at"]


def parse_pointer(text: str) -> tuple[str, ...] | None:
    """The keys a pointer names, or None when it is not a pointer to a member."""
    if not text.startswith("/") or len(text) < 2:
        return None
    keys = []
    for token in text[1:].split("/"):
        # every "~" must begin an escape: "~0" or "~1"
        if token.replace("~0", "").replace("~1", "").count("~") or not token:
            return None
        keys.append(token.replace("~1", "/").replace("~0", "~"))
    return tuple(keys)


def is_pointer(text: str) -> bool:
    return parse_pointer(text) is not None


def join_pointer(keys: tuple[str, ...]) -> str:
    return "".join("/" + k.replace("~", "~0").replace("/", "~1") for k in keys)


def schema_at(schema: Mapping[str, Any] | None, keys: tuple[str, ...]) -> Mapping[str, Any] | None:
    """The declared schema of the member at ``keys`` (nested ``properties``), if any."""
    node: Any = schema or {}
    for key in keys:
        props = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(props, Mapping) or not isinstance(props.get(key), Mapping):
            return None
        node = props[key]
    return node if isinstance(node, Mapping) else None


def leaves_of(prefix: str, value: Any, *, hole: Any) -> Iterator[tuple[str, Any]]:
    """(pointer under ``prefix``, leaf value) for every leaf of ``value``."""
    if isinstance(value, Mapping) and value and not hole(value):
        for key, item in value.items():
            yield from leaves_of(prefix + join_pointer((str(key),)), item, hole=hole)
    else:
        yield prefix, value
