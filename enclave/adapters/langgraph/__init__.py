"""LangGraph and LangChain agents, captured and replayed unchanged
(``docs/adapters/langgraph.md``).

``agent_spec(graph, name=..., version=..., decision=...)`` derives an ``AgentSpec`` from a
compiled graph: a ``langchain.agents.create_agent`` agent or a hand-built ``StateGraph``
with ``ToolNode`` s — or from a function of the run's ``ctx`` that builds such a graph for
each run. Its run is asynchronous: ``graph.ainvoke({"messages": [input]})``.

Why this seam. The graph arrives compiled: ``create_agent`` middleware
(``wrap_tool_call``, ``wrap_model_call``) and a ``ToolNode``'s ``wrap_tool_call`` are
fixed when the graph is built, and ``BaseTool.run``, callbacks and tracers can observe a
tool but never answer for it. What stays open after compilation is the graph's own copy
method: ``Pregel.copy`` with a node's ``PregelNode.copy(bound=...)``. Each run uses such a
copy whose tool nodes are ``ToolNode`` s over the same tool objects with an
``awrap_tool_call`` that crosses ``ctx`` (``_tools``); the agent's graph, its module
and its tools are never changed, and the agent's own tool middleware still runs around
the crossing.

Invariants:

1. One TOOL boundary per tool: request ``{"args"}``, response the ``ToolMessage``
   (``output`` as JSON when the framework wrote it as JSON, ``form``, ``status``,
   ``artifact``), every field sealed (``classification``).
2. A parallel batch (``create_agent``'s ``Send`` per call, ``ToolNode``'s
   ``asyncio.gather``) is told apart by the order its calls start in, which is the
   agent's; the engine serves the answers in the order they arrived at capture.
3. Keys are normalised (``normalise``): generated message and run ids, checkpoint ids
   and timestamps, task ids and provider timing are out.
4. What the agent is handed is the decoded record, at capture as at replay.
5. LangSmith tracing is off in every run (``tracing_context(enabled=False)``).
6. The chat model, declared hosted (``model="planner"``), is one MODEL boundary through
   the LLM cache the framework consults before every provider call (``_model``: the
   one seam that reaches a model built inside a compiled graph); a streamed model call
   is refused (``NoStreaming``). Undeclared, the model runs in process as agent code.
7. A graph compiled with a checkpointer runs on a thread (``thread=<input field>``):
   the thread's prior state is one CONTEXT read (``thread-state``), and a replay runs
   on a fresh saver seeded with it, never on the capture-time saver (``_thread``).
8. A retriever made a tool and declared in ``retrievals`` is a RETRIEVAL boundary; its
   documents are recorded in LangChain's codec (``dumpd``/``load``).
9. A graph built per run (``agent_spec(build)``) is built with each run's own ``ctx``,
   so its chat model's client can be the run's wire client: the model is then captured
   at the wire (a boundary declared in ``boundaries``), never also as a hosted alias.
   The spec's tools are those of the graph built when it is declared, with a context
   that answers nothing; each run's graph must have the same (``_per_run``).
"""

from .. import _warm_ups
from ._codec import decode_tool_message, encode_tool_message, normalise
from ._model import NoStreaming, decode_response, encode_response, model_request
from ._spec import agent_spec, final_output, from_object

__all__ = [
    "NoStreaming",
    "agent_spec",
    "decode_response",
    "encode_response",
    "model_request",
    "decode_tool_message",
    "encode_tool_message",
    "final_output",
    "from_object",
    "normalise",
]


def _warm_template() -> None:
    """In a replay worker's template, once: a round of the framework (``_warm_ups``)."""
    _warm_ups.langgraph()
