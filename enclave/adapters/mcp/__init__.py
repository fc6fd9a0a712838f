"""MCP: every request an agent sends an MCP server, captured and replayed.

``server_boundary(name, ...)`` declares one MCP server as one boundary (TOOL, or
RETRIEVAL for a document server). ``session(ctx, spec, server)`` opens an initialised
``mcp.ClientSession`` to it: the SDK's own typed client, on a dispatcher of this
adapter (``ClientSession(dispatcher=...)``, the SDK's seam between its type layer and
its transports). At capture every request goes to the real server (in process, a stdio
subprocess or a URL) and is recorded; at replay the session has no transport and every
request is served from the record, so no server process ever starts.

Requests are ``{"method", "params"}`` with the session's ``_meta`` stamps, trace
context and JSON-RPC ids left out of the key (``mcp_request``); answers are the raw
result dict (``{"result"}``) or a JSON-RPC error (``{"error"}``), sealed.
"""

from .. import _warm_ups
from ._dispatch import RecordingDispatcher, ReplayDispatcher
from ._session import CLIENT_INFO, session
from ._spec import server_boundary
from ._wire import mcp_request, normalise_params

__all__ = [
    "CLIENT_INFO",
    "RecordingDispatcher",
    "ReplayDispatcher",
    "mcp_request",
    "normalise_params",
    "server_boundary",
    "session",
]


def _warm() -> None:
    """At import, outside any run: complete every MCP type the client builds lazily.
    ``mcp_types`` defers some models' validators to their first use, and building one
    reads the environment (pydantic's plugin loader): inside a run, a capture in a fresh
    process would record a read that a replay in a warm one never makes (or the
    reverse)."""
    import mcp_types
    from mcp_types import methods
    from pydantic import BaseModel, ValidationError

    for name in mcp_types.__all__:
        member = getattr(mcp_types, name, None)
        if isinstance(member, type) and issubclass(member, BaseModel):
            if not member.__pydantic_complete__:
                member.model_rebuild()
    # the per-method result validators the session checks every answer with, each built
    # (and cached) on its first use: built here with an empty result, which most refuse
    for method, version in methods.SERVER_RESULTS:
        try:
            methods.validate_server_result(method, version, {})
        except ValidationError:
            continue  # the validator exists now; refusing {} is its job
    # ``call_tool`` imports jsonschema on its first structured result (seconds of grammar
    # building, in every fresh replay child) and compiles each output schema it meets
    import referencing.exceptions  # noqa: F401 - imported by ``validate_tool_result``
    from jsonschema import exceptions
    from jsonschema.validators import validator_for

    schema = {"type": "object", "properties": {"price": {"type": "number"}}}
    exceptions.best_match(validator_for(schema)(schema).iter_errors({"price": 1.0}))


_warm()  # once per process, before any run


def _warm_template() -> None:
    """In a replay worker's template, once: a round of the framework (``_warm_ups``)."""
    _warm_ups.mcp()
