"""One throwaway round of each framework, for a replay worker's template to run once.

A replay runs every sample's arms in processes forked from the worker's template, which
has imported the agent's declared frameworks (``enclave.replay.stages.worker_preload``).
What a framework builds lazily on its first use — submodules it imports on first access,
pydantic validators it defers, the machinery of its first run — each fork would build
again, for every run. An adapter's ``_warm_template()`` (called by the template once,
``enclave.sandbox.inside._worker``) runs one of these rounds instead, so every run forks
from a template that holds them.

Invariants of every round:

1. It runs installed framework code driven by this module only: no agent code (none is
   imported in the template), no model or tool of anyone else.
2. It opens no socket, starts no process and reads no file of its own: models are the
   frameworks' offline test models or functions here, HTTP answers come from a mock
   transport, MCP traffic stays in memory.
3. It leaves no thread, loop or task running (the template checks the threads), and no
   state that could tell runs apart: every run forks from the same template, after it.
   It starts no thread either: its functions, tools and models are coroutines, so no
   framework hands them to a worker thread (one that outlived the round would fail the
   worker's start).
4. It draws no randomness a run could see: rounds that draw ids do so before any run
   exists, and a run's draws are served from its own streams (``enclave.capture``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["agents_sdk", "langgraph", "mcp", "openai_client", "pydantic_ai"]

_NOTE = "warm-up"
# a chat completion as a server would send it: what the warm-up's client parses
_COMPLETION = {
    "id": _NOTE,
    "object": "chat.completion",
    "created": 0,
    "model": _NOTE,
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": _NOTE}}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def openai_client() -> None:
    """One chat completion through ``openai.AsyncOpenAI``, answered by a mock transport:
    the client's resource modules (imported on first access) and its response models'
    validators (deferred to the first response)."""
    import httpx2
    import openai

    async def complete() -> None:
        transport = httpx2.MockTransport(lambda _: httpx2.Response(200, json=_COMPLETION))
        async with openai.AsyncOpenAI(
            api_key=_NOTE,
            base_url="http://warm-up.invalid/v1",  # never resolved: the transport answers
            http_client=httpx2.AsyncClient(transport=transport),
            max_retries=0,
        ) as model:
            await model.chat.completions.create(
                model=_NOTE, messages=[{"role": "user", "content": _NOTE}]
            )

    asyncio.run(complete())


def pydantic_ai() -> None:
    """One run of a pydantic-ai ``Agent`` on a ``FunctionModel``: a tool call, then a typed
    output (the agent graph's machinery, anyio's asyncio backend)."""
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    class Answer(BaseModel):
        note: str

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answered = any(
            isinstance(part, ToolReturnPart) for message in messages for part in message.parts
        )
        if not answered:
            return ModelResponse(parts=[ToolCallPart("echo", {"note": _NOTE})])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"note": _NOTE})])

    agent = Agent(FunctionModel(model), output_type=Answer)

    @agent.tool_plain
    async def echo(note: str) -> dict[str, str]:
        return {"note": note}

    asyncio.run(agent.run(_NOTE))


def agents_sdk(trace_provider: Any) -> None:
    """One ``Runner.run`` of an Agents SDK ``Agent`` on the SDK's own ``ScriptedModel``: a
    function tool call, then a typed output. Tracing as in every replayed run: off, and
    ``trace_provider`` (the adapter's silent one) set first, so the SDK never builds its
    default one (an exporter thread, an HTTP client)."""
    from agents import Agent, RunConfig, Runner, function_tool, set_trace_provider
    from agents.testing import ScriptedModel, assistant_message, function_call
    from pydantic import BaseModel

    class Answer(BaseModel):
        note: str

    @function_tool
    async def echo(note: str) -> str:
        """Echo the note.

        Args:
            note: The note.
        """
        return note

    model = ScriptedModel(
        [
            [function_call("echo", {"note": _NOTE}, call_id="warm-up")],
            [assistant_message(json.dumps({"note": _NOTE}))],
        ]
    )
    agent = Agent(name=_NOTE, tools=[echo], output_type=Answer)
    config = RunConfig(model=model, tracing_disabled=True)
    set_trace_provider(trace_provider)
    asyncio.run(Runner.run(agent, _NOTE, run_config=config))


def mcp() -> None:
    """A task group and a memory stream on anyio's asyncio backend (imported on first
    use): what every MCP session runs on."""
    import anyio

    async def exchange() -> None:
        send, receive = anyio.create_memory_object_stream[Any](1)
        async with anyio.create_task_group() as group, send, receive:
            group.start_soon(send.send, _NOTE)
            await receive.receive()

    asyncio.run(exchange())


def langgraph() -> None:
    """One ``ainvoke`` of a compiled ``StateGraph`` whose node asks LangChain's fake chat
    model, tracing off: the graph runner, callbacks and message machinery."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph
    from langsmith.run_helpers import tracing_context
    from typing_extensions import TypedDict

    # built by call: the graph reads the annotations, which are no strings here
    State = TypedDict("State", {"messages": list[AnyMessage]})  # noqa: UP013

    chat = GenericFakeChatModel(messages=iter([AIMessage(content=_NOTE)]))

    async def answer(state: State) -> dict[str, list[AnyMessage]]:
        return {"messages": [*state["messages"], await chat.ainvoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    compiled = graph.compile()
    with tracing_context(enabled=False):
        asyncio.run(compiled.ainvoke({"messages": [HumanMessage(content=_NOTE)]}))
