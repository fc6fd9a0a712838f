"""What one MCP request is recorded under, and how its answer is kept and handed back.

A request is ``{"method", "params"}``: the JSON-RPC method and its params without what
differs between two identical runs. The client stamps every request's ``params._meta``
with the session's protocol version, client info and capabilities
(``io.modelcontextprotocol/*``), and may add trace context (``traceparent``,
``tracestate``, ``baggage``) and a ``progressToken``: all are left out of the key. The
JSON-RPC id is minted below the dispatcher and never reaches it. Any other ``_meta``
member is the caller's content and stays in the key.

An answer is ``{"result": <the raw result dict>}`` or, when the server answered with a
JSON-RPC error, ``{"error": {"code", "message", "data"}}``: an error is part of the
record, so a run that handled it at capture meets it again at replay.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError

__all__ = ["VOLATILE_META", "decode_answer", "encode_error", "mcp_request", "normalise_params"]

STAMP_PREFIX = "io.modelcontextprotocol/"  # the session's per-request stamps
VOLATILE_META = frozenset({"traceparent", "tracestate", "baggage", "progressToken"})


def normalise_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``params`` without the session's ``_meta`` stamps, trace context and progress
    token; ``_meta`` itself goes when nothing of the caller's is left in it."""
    if params is None:
        return None
    out = copy.deepcopy(dict(params))
    meta = out.pop("_meta", None)
    if isinstance(meta, Mapping):
        kept = {
            key: value
            for key, value in meta.items()
            if not key.startswith(STAMP_PREFIX) and key not in VOLATILE_META
        }
        if kept:
            out["_meta"] = kept
    elif meta is not None:
        out["_meta"] = meta
    return out


def mcp_request(method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request one MCP call (or notification) is recorded under."""
    if not isinstance(method, str) or not method:
        raise ValueError("an MCP method is a non-empty string")
    return {"method": method, "params": normalise_params(params)}


def encode_error(error: MCPError) -> dict[str, Any]:
    """A JSON-RPC error answer as the record keeps it."""
    return {
        "error": {"code": error.code, "message": error.message, "data": error.data},
    }


def decode_answer(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The raw result dict of a recorded answer (a private copy); a recorded error is
    raised again as the ``MCPError`` the client raised at capture."""
    error = answer.get("error")
    if error is not None:
        raise MCPError(int(error["code"]), str(error["message"]), error.get("data"))
    result = answer.get("result")
    if not isinstance(result, Mapping):
        raise ValueError("a recorded MCP answer holds no result")
    return copy.deepcopy(dict(result))
