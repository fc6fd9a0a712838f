"""JSON Schemas of framework tools, as boundaries declare them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["inline_refs", "schema_version"]

_MAX_DEPTH = 16  # a recursive model's schema is cut here, not followed forever


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$ref`` s inlined, so an intervention's JSON Pointer
    finds nested members (``/output/terms``) through ``properties`` alone."""
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < _MAX_DEPTH:
            return walk(defs[ref.removeprefix("#/$defs/")], depth + 1)
        return {k: walk(v, depth) for k, v in node.items() if k != "$defs"}

    return dict(walk(dict(schema), 0))


def schema_version(schema: Mapping[str, Any]) -> str:
    """A tool boundary's schema version: a short digest of its argument schema, so a
    changed tool is a changed boundary."""
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]
