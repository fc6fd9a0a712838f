"""LangGraph/LangChain agents written as their documentation writes them, captured
unchanged.

A procurement agent: the model asks for two quotes in one turn — a parallel batch —
then both suppliers' ratings in the next, then answers with a JSON verdict built from
the tool results. The model is a scripted chat model whose ``bind_tools`` returns
itself, as LangChain's own agent tests write their tool-calling fake; it runs in
process, as agent code. The live tools sleep a random latency, so the world decides
the order a batch's answers arrive in, and they raise unless ``with live():`` is
active: a replay that ever ran one would end its branch with ``agent_error``.

``AGENT`` is a ``create_agent`` agent; ``GRAPH_AGENT`` the same tools and model in a
hand-built ``StateGraph`` with a ``ToolNode`` and ``tools_condition``; ``DIRECT_AGENT``
calls its tools itself (no ``ToolNode``). ``HOSTED_MODEL_AGENT`` treats the model as
hosted (a model boundary) and answers with a typed ``Verdict`` (``ToolStrategy``);
``STREAMING_AGENT``'s model streams. ``THREAD_AGENT`` continues a thread of its own
checkpointer (``SAVER``): a user message earlier in the thread can block a supplier.
``RETRIEVAL_AGENT`` looks the supplier up in a retriever made a tool
(``create_retriever_tool``), declared a retrieval.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, create_retriever_tool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel
from typing_extensions import TypedDict

from enclave.adapters.langgraph import agent_spec
from tests.support.live_world import LiveWorld

SUPPLIERS = ("acme", "globex")
THRESHOLD = 0.5
MAX_LATENCY = 0.004  # seconds: enough to shuffle the batch's arrival order
CANARY_PROMPT = "CANARY-LANGGRAPH-PROMPT-5d93a1"  # planted in the user's message
CANARY_TERMS = "CANARY-LANGGRAPH-TERMS-2f7e08"  # planted in every quote the tool returns
CANARIES = (CANARY_PROMPT, CANARY_TERMS)

WORLD = LiveWorld(MAX_LATENCY)
live = WORLD.open  # the live world for one capture


class Quote(TypedDict):
    supplier: str
    price: float
    terms: str


@tool
async def quote(supplier: str) -> Quote:
    """A supplier's current quote for the order."""
    await WORLD.reach("a supplier")
    price = 100 + 70 * SUPPLIERS.index(supplier)
    return {"supplier": supplier, "price": price, "terms": f"net 30 {CANARY_TERMS}"}


@tool
async def rating(supplier: str) -> float:
    """The supplier's delivery rating, 0 to 1."""
    await WORLD.reach("a supplier")
    return round(0.9 - 0.1 * SUPPLIERS.index(supplier), 2)


TOOLS = [quote, rating]


def _returns(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """Tool results of this turn (since the last user message), by tool and supplier
    (the call's id names the supplier)."""
    out: dict[str, Any] = {}
    for message in messages[_turn_start(messages) :]:
        if isinstance(message, ToolMessage):
            supplier = str(message.tool_call_id).rpartition("-")[2]
            out[f"{message.name}:{supplier}"] = json.loads(message.text)
    return out


def _turn_start(messages: Sequence[BaseMessage]) -> int:
    users = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    return users[-1] if users else 0


def _blocked(messages: Sequence[BaseMessage]) -> set[str]:
    """Suppliers a user message in the thread blocked (``blocked:<supplier>``)."""
    return {
        s
        for m in messages
        if isinstance(m, HumanMessage)
        for s in SUPPLIERS
        if f"blocked:{s}" in m.text
    }


def procurement_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """The model: two quotes at once, then both ratings at once, then a verdict for the
    supplier of best value (rating per price)."""
    seen = _returns(messages)
    if "quote:acme" not in seen:
        return _calls("quote")
    if "rating:acme" not in seen:
        return _calls("rating")
    values = {s: float(seen[f"rating:{s}"]) * 100 / seen[f"quote:{s}"]["price"] for s in SUPPLIERS}
    allowed = [s for s in SUPPLIERS if s not in _blocked(messages)] or list(SUPPLIERS)
    best = max(allowed, key=lambda s: values[s])
    score = round(min(1.0, values[best]), 6)
    verdict = {
        "supplier": best,
        "decision": "BUY" if score >= THRESHOLD else "HOLD",
        "score": score,
        "rationale": f"{best} quotes {seen[f'quote:{best}']['price']}",
    }
    return AIMessage(content=json.dumps(verdict))


def _calls(name: str) -> AIMessage:
    calls = [{"name": name, "args": {"supplier": s}, "id": f"call_{name}-{s}"} for s in SUPPLIERS]
    return AIMessage(content="", tool_calls=calls)


class ScriptedChatModel(BaseChatModel):
    """A tool-calling fake chat model: ``bind_tools`` returns itself (as LangChain's own
    ``FakeToolCallingModel``), and each turn is the script's answer to the messages."""

    script: Callable[[Sequence[BaseMessage]], AIMessage]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self  # type: ignore[return-value]

    @property
    def _llm_type(self) -> str:
        return "scripted"


INSTRUCTIONS = "Choose the supplier with the best value; buy when the score is high."

model = ScriptedChatModel(script=procurement_script)
procurement = create_agent(model, tools=TOOLS, system_prompt=INSTRUCTIONS)


def build_graph(chat: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    """The same agent as a hand-built graph (the LangGraph quickstart's shape)."""
    return graph_builder(chat, tools).compile()


def graph_builder(chat: BaseChatModel, tools: Sequence[BaseTool]) -> StateGraph[Any]:
    """The hand-built graph before ``compile()``: what a module may expose instead."""
    bound = chat.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


graph = build_graph(model, TOOLS)


def prompt(order: str = "PO-7731") -> str:
    return f"Order {order}: 40 pallets, see attached note {CANARY_PROMPT}"


INPUT = {"input": prompt()}


def _spec(agent_name: str, target: Any, **options: Any) -> Any:
    return agent_spec(
        target,
        name=f"tests.agents.langgraph_agents:{agent_name}",
        version="1.0.0",
        decision="decision",
        score="score",
        **options,
    )


AGENT = _spec("AGENT", procurement)
GRAPH_AGENT = _spec("GRAPH_AGENT", graph)


def build_direct_graph(chat: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    """A hand-written tool node (it calls ``tool.ainvoke`` itself): no ``ToolNode``, so
    no boundary — its tools run live wherever the graph runs."""
    bound = chat.bind_tools(tools)
    by_name = {t.name: t for t in tools}

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    async def run_tools(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {"messages": [await by_name[c["name"]].ainvoke(c) for c in last.tool_calls]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", run_tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


DIRECT_AGENT = _spec("DIRECT_AGENT", build_direct_graph(model, TOOLS))


class Verdict(BaseModel):
    supplier: str
    decision: Literal["BUY", "HOLD"]
    score: float
    rationale: str


def structured_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """The procurement script, answering through the ``Verdict`` tool call
    (``ToolStrategy``) instead of text."""
    answer = procurement_script(messages)
    if answer.tool_calls:
        return answer
    verdict = json.loads(answer.text)
    return AIMessage(
        content="", tool_calls=[{"name": "Verdict", "args": verdict, "id": "call_verdict"}]
    )


planner = ScriptedChatModel(script=structured_script)
structured_procurement = create_agent(
    planner, tools=TOOLS, system_prompt=INSTRUCTIONS, response_format=ToolStrategy(Verdict)
)
HOSTED_MODEL_AGENT = _spec(
    "HOSTED_MODEL_AGENT", structured_procurement, model="planner", structured=Verdict
)


class StreamingChatModel(ScriptedChatModel):
    """The scripted model as a provider's streaming model (``streaming=True``)."""

    streaming: bool = True

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        message = self.script(messages)
        chunk = ChatGenerationChunk(
            message=AIMessageChunk(content=message.content, tool_calls=message.tool_calls)
        )
        if run_manager is not None:
            await run_manager.on_llm_new_token(message.text, chunk=chunk)
        yield chunk


STREAMING_AGENT = _spec(
    "STREAMING_AGENT",
    create_agent(StreamingChatModel(script=procurement_script, streaming=True), tools=TOOLS),
    model="planner",
)


SAVER = InMemorySaver()  # the agent's own checkpointer: its threads outlive a run
threaded_procurement = create_agent(
    model, tools=TOOLS, system_prompt=INSTRUCTIONS, checkpointer=SAVER
)
THREAD_AGENT = _spec("THREAD_AGENT", threaded_procurement, thread="thread")


async def earlier_turn(thread: str, note: str) -> None:
    """An earlier run on ``thread`` (not captured): its state is the next run's input."""
    with live():
        await threaded_procurement.ainvoke(
            {"messages": [HumanMessage(note)]}, {"configurable": {"thread_id": thread}}
        )


class PolicyRetriever(BaseRetriever):
    """The purchasing policy's search (a stand-in for a vector store): live only in
    the live world."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        raise RuntimeError("the policy search is asynchronous")

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        await WORLD.reach("the policy store")
        return [
            Document(page_content=f"{query}: approved supplier", metadata={"source": "p-1"}),
            Document(page_content=f"net 30 terms {CANARY_TERMS}", metadata={"source": "p-2"}),
        ]


search_policy = create_retriever_tool(
    PolicyRetriever(),
    "search_policy",
    "Search the purchasing policy.",
    response_format="content_and_artifact",
)


def policy_script(messages: Sequence[BaseMessage]) -> AIMessage:
    """Look the supplier up in the policy, then buy when the policy approves it."""
    found = [m for m in messages[_turn_start(messages) :] if isinstance(m, ToolMessage)]
    if not found:
        call = {"name": "search_policy", "args": {"query": "acme"}, "id": "call_policy"}
        return AIMessage(content="", tool_calls=[call])
    approved = "approved supplier" in found[0].text
    verdict = {"supplier": "acme", "decision": "BUY" if approved else "HOLD", "score": 1.0}
    return AIMessage(content=json.dumps(verdict))


RETRIEVAL_AGENT = _spec(
    "RETRIEVAL_AGENT",
    create_agent(ScriptedChatModel(script=policy_script), tools=[search_policy]),
    retrievals=("search_policy",),
)
