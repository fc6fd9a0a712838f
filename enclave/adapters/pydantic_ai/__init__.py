"""pydantic-ai agents, captured and replayed unchanged (``docs/adapters/pydantic-ai.md``).

``agent_spec(agent, name=..., version=..., decision=...)`` derives an ``AgentSpec`` from
a ``pydantic_ai.Agent``. Its run function is asynchronous: it runs
``agent.run(inputs["input"], deps=...)`` with two of the framework's own seams in place.

* Tools: a capability (``AbstractCapability.wrap_tool_execute``, passed per run with
  ``capabilities=[...]``) sends every function tool's execution through ``ctx.acall``:
  one TOOL boundary per tool, request ``{"args"}`` (the validated arguments), response
  ``{"output"}`` (the return value as JSON, rebuilt with the tool's return annotation).
  Output tools never reach this hook: they are the model's answer, not a crossing.
* The model, when declared hosted (``model="planner"``): ``agent.override(model=...)``
  puts a ``WrapperModel`` in its place whose ``request`` goes through ``ctx.acall``:
  request ``{"messages", "settings", "parameters"}``, response ``{"message", "calls"}``,
  messages in the framework's codec (``ModelMessagesTypeAdapter``). ``calls`` holds each
  tool call's arguments by tool name (``final_result``, ``quote``, ``quote#1``...), so
  an intervention addresses the model's typed output by pointer (``/calls/final_result/
  decision``) — also where the provider's structured-output mode (``NativeOutput``)
  answers it as JSON text, kept verbatim beside its value. An in-process model
  (``FunctionModel``, ``TestModel``) runs as agent code.
* The model, captured at the wire (``wire_model=factory``): each run puts
  ``factory(ctx)`` in the agent's place (``agent.override(model=...)``), a model whose
  client the factory builds on the wire adapter (``enclave.adapters.http.async_client``,
  its boundary declared in ``boundaries``): each exchange with the endpoint is recorded
  as it was sent and answered, the form governed inference can ask again.

Invariants:

1. Every content field is sealed (``classification``, confidential by default); only
   boundary and tool names are in clear.
2. Requests are normalised: timestamps, ``run_id``/``conversation_id`` and tool-call ids
   the framework generated (``pyd_ai_<uuid>``) are left out of the request (ids are
   numbered by first appearance instead); a provider's own ids are kept.
3. What the agent is handed is always the decoded record, at capture as at replay, so
   both see equal objects.
4. A replay never goes live: model requests are disallowed
   (``override_allow_model_requests``), so a hosted model that is no declared boundary
   raises; an instrumented agent (OpenTelemetry egress) is refused. The one exception is
   the wire model's own request, and what it awaits (``_wire``): the allowance is a
   context variable of that request, so no other task, nor the run's own code before or
   after the request, is allowed meanwhile; the wire client it goes out through serves
   the record and asks nothing the record does not hold.
"""

import pydantic_ai
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

from .. import _warm_ups
from ._codec import decode_response, encode_response, model_request, normalise
from ._model import MAX_SAME_CALLS
from ._spec import agent_spec, from_object

__all__ = [
    "MAX_SAME_CALLS",
    "agent_spec",
    "decode_response",
    "encode_response",
    "from_object",
    "model_request",
    "normalise",
]


def _warm() -> None:
    """At import, outside any run: build what the framework builds lazily on its first
    run in a process, and turn its first-run banner off (``pydantic_ai.BANNER_ENABLED``,
    the documented switch). Both read the environment, once per process: inside a run,
    a run captured in a fresh process would read what a replay in a warm one does not
    (or the reverse). The schema builds read ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's
    plugin loader), the banner a list of variables naming coding agents. The price
    table (``genai_prices.data``, imported on first use) is the framework's import, not
    the agent's: a replay worker's template imports it once instead of every run."""
    import genai_prices.data  # noqa: F401 - see above

    pydantic_ai.BANNER_ENABLED = False
    sample = ModelResponse(parts=[ToolCallPart("tool", {"a": 1})])
    ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python([sample]))
    ToolReturnPart(tool_name="tool", content={"a": 1}).model_response_str()


_warm()  # at import: once per process, before any run


def _warm_template() -> None:
    """In a replay worker's template, once: a round of the framework (``_warm_ups``)."""
    _warm_ups.pydantic_ai()
