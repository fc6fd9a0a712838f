"""The ``AgentSpec`` of a compiled LangGraph graph (a ``create_agent`` agent, or a
``StateGraph`` with ``ToolNode`` s) and its run."""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pydantic
from langchain_core.globals import get_llm_cache, set_llm_cache
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langsmith.run_helpers import tracing_context

from enclave.adapters._outcome import outcome_policies

from ...capture import AgentSpec, BoundarySpec, Context, FieldPolicy, policy
from .._schemas import inline_refs
from ._model import RunCache, StreamGuard, model_spec
from ._per_run import Build, declared_graph, run_graph, same_tools
from ._thread import read_thread, seeded_saver, thread_spec
from ._tools import Tool, check_tool_node, route_tools, tool_nodes

__all__ = ["agent_spec", "final_output", "from_object"]

Outcome = Callable[[Any], Any]
Graph = Pregel[Any, Any, Any, Any]
FRAMEWORKS = (
    "langchain_core",
    "langgraph.graph",
    "langgraph.prebuilt",
    "langchain.agents",
    "enclave.adapters.langgraph",
)


def final_output(state: Mapping[str, Any]) -> Any:
    """What a run answers: the structured response (``create_agent(response_format=)``)
    if there is one, else the last AI message's text, parsed when it is JSON."""
    if state.get("structured_response") is not None:
        return state["structured_response"]
    messages = [m for m in state.get("messages", ()) if isinstance(m, AIMessage)]
    if not messages:
        raise ValueError("the run ended without an answer")
    text = messages[-1].text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _reader(pick: str | Outcome | None) -> Outcome | None:
    if pick is None or callable(pick):
        return pick
    return lambda output: output[pick] if isinstance(output, Mapping) else getattr(output, pick)


def _tools_of(graph: Graph, rule: FieldPolicy, retrievals: tuple[str, ...]) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for node in tool_nodes(graph).values():
        check_tool_node(node)
        for name, tool in node.tools_by_name.items():
            tools[name] = Tool(tool, rule, retrieval=name in retrievals)
    if unknown := set(retrievals) - set(tools):
        raise ValueError(f"{len(unknown)} declared retrieval(s) name no tool of the graph")
    return tools


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return dumpd(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def _tool_objects(graph: Graph) -> dict[str, int]:
    return {
        name: id(tool)
        for node in tool_nodes(graph).values()
        for name, tool in node.tools_by_name.items()
    }


def _check_checkpointer(graph: Graph, thread: str | None) -> None:
    if thread is not None and not isinstance(graph.checkpointer, BaseCheckpointSaver):
        raise ValueError("a thread needs a graph compiled with a checkpointer")
    if thread is None and graph.checkpointer not in (None, False):
        raise ValueError("a graph compiled with a checkpointer needs thread=<input field>")


@contextmanager
def _model_routed(ctx: Context, spec: BoundarySpec | None) -> Iterator[None]:
    """The run's model calls through ``ctx`` (``RunCache``), when the model is hosted."""
    if spec is None:
        yield
        return
    cache = RunCache(get_llm_cache())
    set_llm_cache(cache)
    token = cache.bind(ctx, spec)
    try:
        yield
    finally:
        cache.unbind(token)
        set_llm_cache(cache.previous)


def agent_spec(
    graph: Graph | Build,
    *,
    name: str,
    version: str,
    decision: str | Outcome,
    score: str | Outcome | None = None,
    model: str | None = None,
    structured: type[pydantic.BaseModel] | None = None,
    extra_inputs: tuple[str, ...] = (),
    thread: str | None = None,
    retrievals: tuple[str, ...] = (),
    boundaries: Sequence[BoundarySpec] = (),
    frameworks: tuple[str, ...] = (),
    classification: str = "confidential",
    credentials: tuple[str, ...] = (),
    code_modules: tuple[str, ...] = (),
    module: str | None = None,
) -> AgentSpec:
    """An ``AgentSpec`` for a compiled graph. ``decision`` (and ``score``) name a member
    of the run's answer (``final_output``), or compute it from the answer. ``model``
    declares the chat model a hosted boundary of that name (``_model``); without it the
    model runs in process, as agent code. ``structured`` is the ``response_format`` model
    of a ``create_agent`` agent that answers through a tool call (``ToolStrategy``): its
    proposal is then addressable too (``/calls/<name>/...``). ``extra_inputs`` are input
    fields besides ``input`` (the user's message), sealed alike and handed to the graph
    as its ``context``. ``thread`` names the input field that holds the thread id of a
    graph compiled with a checkpointer: the thread's prior state is then an input
    (``_thread``). ``retrievals`` names tools that are retrievals (a retriever made a
    tool, ``create_retriever_tool``): their boundaries are RETRIEVAL, their documents
    recorded in LangChain's codec. ``boundaries`` are further boundaries the graph's own
    code crosses through ``ctx`` (the wire boundary of a model whose client is on the
    wire adapter, a client a tool calls). ``frameworks`` are further installed packages
    the graph's module imports (a provider's, ``langchain_openai``): the replay worker's
    template imports them once, before any run.
    ``module`` is the module that holds the graph (by default the caller's).

    ``graph`` may instead be a function that builds the graph from a run's ``ctx``
    (``_per_run``): called with each run's own ``ctx``, it can give the chat model the
    run's wire client (``ChatOpenAI(http_async_client=async_client(ctx, BOUNDARY,
    library="httpx2"))``, the boundary declared in ``boundaries``), and the model is
    then captured at the wire, where governed inference can ask it again. It is called
    once more when the spec is declared, with a context that answers nothing: building
    the graph crosses no boundary. Such a graph's model takes no hosted alias."""
    if module is None:
        module = str(sys._getframe(1).f_globals["__name__"])
    build: Build | None = None
    if not isinstance(graph, Pregel):
        if not callable(graph):
            raise TypeError(
                "agent_spec takes a compiled graph (create_agent, StateGraph.compile) "
                "or a function of the run's ctx that builds one"
            )
        if model is not None:
            raise ValueError(
                "the model is captured in one place: a graph built per run takes no "
                "hosted alias ('model'); capture its model at the wire"
            )
        build, graph = graph, declared_graph(graph)
    rule = policy(classification)
    tools = _tools_of(graph, rule, retrievals)
    declared_tools = {name: tool.spec for name, tool in tools.items()}
    boundaries = (*(tool.spec for tool in tools.values()), *boundaries)
    if len({b.name for b in boundaries}) != len(boundaries):
        raise ValueError("a declared boundary's name is taken by a tool or another boundary")
    hosted = None
    if model is not None:
        if model in {b.name for b in boundaries}:
            raise ValueError("the model boundary's name is taken by a tool or a boundary")
        proposals = {name: tool.parameters for name, tool in tools.items()}
        if structured is not None:
            proposals[structured.__name__] = inline_refs(structured.model_json_schema())
        hosted = model_spec(model, proposals, rule)
        boundaries += (hosted,)
    _check_checkpointer(graph, thread)
    state_spec = None
    if thread is not None:
        state_spec = thread_spec(rule)
        boundaries += (state_spec,)
    decide, scored = _reader(decision), _reader(score)
    assert decide is not None
    declared, declared_objects = graph, _tool_objects(graph)

    async def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        graph, run_tools = declared, tools
        if build is not None:  # the run's own graph, built with its ctx
            graph = run_graph(build, ctx)
            if _tool_objects(graph) != declared_objects:  # else the declared tools, as they are
                run_tools = _tools_of(graph, rule, retrievals)
                same_tools(declared_tools, {name: tool.spec for name, tool in run_tools.items()})
            _check_checkpointer(graph, thread)
        called: list[str] = []
        routed = route_tools(graph, ctx, run_tools, called)
        context = {field: inputs[field] for field in extra_inputs} or None
        config: dict[str, Any] = {"callbacks": [StreamGuard()]}
        if state_spec is not None:
            assert thread is not None and isinstance(graph.checkpointer, BaseCheckpointSaver)
            thread_id = str(inputs[thread])
            config["configurable"] = {"thread_id": thread_id}
            prior = await read_thread(ctx, state_spec, graph.checkpointer, thread_id)
            if ctx.serves_record:  # never the capture-time saver
                routed = routed.copy({"checkpointer": await seeded_saver(prior, thread_id)})
        # LangSmith tracing would carry sealed content out of the run: off in every run,
        # whatever LANGSMITH_TRACING says
        with tracing_context(enabled=False), _model_routed(ctx, hosted):
            state = await routed.ainvoke(
                {"messages": [HumanMessage(inputs["input"])]},
                typing.cast(Any, config),
                context=context,
            )
        output = final_output(state)
        outcome = {"decision": decide(output), "proposal": _jsonable(output), "evidence": called}
        if scored is not None:  # a categorical agent carries no score at all
            outcome["score"] = scored(output)
        return outcome

    run.__module__ = module  # the graph's module: its import reference, its code
    return AgentSpec(
        name=name,
        version=version,
        function=typing.cast(Callable[..., Mapping[str, Any]], run),
        inputs={
            "input": rule,
            **{field: rule for field in extra_inputs},
            **({thread: rule} if thread is not None else {}),
        },
        outcome=outcome_policies(rule, scored=score is not None),
        score_bounds=(0.0, 1.0) if score is not None else None,
        boundaries=boundaries,
        credentials=credentials,
        code_modules=code_modules,
        # imported once by the replay worker's template, not in every run (``langgraph``
        # is a namespace package: its subpackages are named)
        frameworks=(*FRAMEWORKS, *frameworks),
    )


def from_object(
    graph: Any,
    *,
    name: str,
    version: str,
    decision: str,
    score: str | None = None,
    model: str | None = None,
    module: str,
) -> AgentSpec:
    """The spec ``replay-enclave capture module:attr`` builds for a compiled graph (entry-
    point group ``replay_enclave.adapters``): ``inputs.input`` is the user's message,
    ``decision`` (and ``score``) a member of the run's answer (``final_output``), ``model``
    the chat model's boundary alias when it is hosted. A ``StateGraph`` not yet
    compiled is compiled here, as its module would. A graph that needs a thread, a
    run context or named retrievals needs an ``agent_spec(...)`` written for it."""
    if isinstance(graph, StateGraph):
        try:
            graph = graph.compile()  # no checkpointer: the run keeps no thread
        except (ValueError, TypeError):  # its message names the graph's nodes
            raise ValueError("the LangGraph StateGraph does not compile") from None
    if not isinstance(graph, Pregel):
        raise TypeError("the object is not a LangGraph graph (compiled or a StateGraph)")
    if graph.checkpointer is not None:
        raise ValueError("a graph with a checkpointer runs on a thread: write an agent_spec")
    return agent_spec(
        graph,
        name=name,
        version=version,
        decision=decision,
        score=score,
        model=model,
        module=module,
    )
