"""The OpenAI Agents SDK: an ``agents.Agent`` captured and replayed unchanged.

``agent_spec(agent, ...)`` derives an ``AgentSpec`` from the agent: its tools, those of the
agents it hands off to (and of further ``agents``), and the run. The run calls
``Runner.run`` on a copy of the agent whose tools cross the run's ``ctx``:

- every ``FunctionTool`` is one TOOL boundary (named as the tool). Its ``on_invoke_tool``
  is wrapped (``dataclasses.replace``, ``Agent.clone`` through the handoffs), so each call
  goes through ``ctx.acall``: the request is the tool's arguments, the response its
  output (``{"output": ...}``), both sealed. An intervention addresses the output by JSON
  Pointer (``/output/price``), as far as the tool's return type declares it;
- the model is the ``RunConfig(model=...)`` of the run: a fresh ``Model`` from the
  ``model`` factory each run, wrapped. With ``hosted=ALIAS`` the model is one MODEL
  boundary: each ``get_response`` goes through ``ctx.acall`` (recorded with the SDK's
  own pydantic ``model_dump`` of each output item, rebuilt into a ``ModelResponse`` at
  capture and replay alike). Without it the model runs as agent code (an in-process
  ``Model``, such as ``agents.testing.ScriptedModel``), at capture and replay alike.

- every MCP server of the agents (``Agent.mcp_servers``) is one MCP boundary named as the
  server: in the run's copies of the agents each is replaced by a routed
  ``agents.mcp.MCPServer`` whose requests cross ``ctx`` through ``enclave.adapters.mcp``
  (recorded from the real server at capture, served from the record at replay, where the
  SDK's server object is never connected).

Model requests are normalised (``model_request``): the per-run ``prompt_cache_key`` and
tracing are left out of the key. A request that depends on state the record cannot hold
— ``previous_response_id``, ``conversation_id``, a stored prompt, hosted tools that run
inside the model call — is refused at capture (``ServerStateRefused``): a replay could
serve its recorded answer, but no counterfactual past it would be auditable.

The SDK's tracing is off in every run (``RunConfig(tracing_disabled=True)``, and
``set_tracing_disabled(True)`` in a replay): traces would carry sealed content to an
exporter. A replay never calls the model or a tool: the record answers, and a call the
record lacks ends the branch. Credentials the model's client reads are the engine's to
serve (a placeholder at replay).
"""

from .. import _warm_ups
from ._codec import ServerStateRefused, dump_response, load_response, model_request
from ._model import model_boundary
from ._spec import agent_spec, from_object
from ._tools import tool_boundary
from ._tracing import SilentTraceProvider

__all__ = [
    "ServerStateRefused",
    "SilentTraceProvider",
    "agent_spec",
    "dump_response",
    "from_object",
    "load_response",
    "model_boundary",
    "model_request",
    "tool_boundary",
]


def _warm_template() -> None:
    """In a replay worker's template, once: a round of the framework (``_warm_ups``)."""
    _warm_ups.agents_sdk(SilentTraceProvider())
