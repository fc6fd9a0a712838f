"""``server_boundary``: one MCP server as one declared boundary."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ledger import StepKind

from ...capture import BoundarySpec, policy
from .._schemas import inline_refs

__all__ = ["server_boundary"]

KINDS = (StepKind.TOOL, StepKind.RETRIEVAL)


def _structured(output_schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One schema for ``structuredContent`` over every tool: the union of their
    members. A member two tools declare differently has no single schema: refused."""
    members: dict[str, Any] = {}
    for schema in output_schemas.values():
        inlined = inline_refs(schema)
        if inlined.get("type") != "object" or not isinstance(inlined.get("properties"), dict):
            raise ValueError("a tool's output schema is an object schema with properties")
        for key, member in inlined["properties"].items():
            if key in members and members[key] != member:
                raise ValueError("two tools declare one structured member differently")
            members[key] = member
    return {"type": "object", "properties": members}


def server_boundary(
    name: str,
    *,
    output_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    kind: StepKind = StepKind.TOOL,
    classification: str = "confidential",
) -> BoundarySpec:
    """The boundary of one MCP server: every request a session sends it (the handshake,
    ``tools/list``, ``tools/call``, ``resources/read``..., and the client's
    notifications), in call order.

    Request ``{"method", "params"}`` (the method in clear as internal, the params sealed
    with ``classification``), response ``{"result"}`` (the raw result dict) or
    ``{"error"}`` (a JSON-RPC error), sealed alike. ``output_schemas`` maps tool names
    to their output JSON Schemas (``outputSchema`` in ``tools/list``, or the return
    model's ``model_json_schema()``): an intervention may change a member of
    ``/result/structuredContent`` they declare, or ``/result/isError``, or the whole
    ``/result/content`` (an array is one value). ``kind`` is TOOL, or RETRIEVAL for a
    server read for documents (resources)."""
    if kind not in KINDS:
        raise ValueError("an MCP server boundary is a TOOL or a RETRIEVAL")
    sealed = policy(classification)
    schemas = dict(output_schemas or {})
    result: dict[str, Any] = {
        "type": "object",
        "properties": {
            "content": {"type": "array"},
            "isError": {"type": "boolean"},
            "structuredContent": _structured(schemas),
        },
    }
    fingerprint = hashlib.sha256(
        json.dumps({k: schemas[k] for k in sorted(schemas)}, sort_keys=True).encode()
    ).hexdigest()[:16]
    return BoundarySpec(
        kind=kind,
        name=name,
        request={"method": policy("internal"), "params": sealed},
        response={"result": sealed, "error": sealed},
        schema_id=f"mcp-server:{name}",
        schema_version=fingerprint,
        json_schema={"type": "object", "properties": {"result": result}},
    )
