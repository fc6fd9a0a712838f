"""LangGraph graphs built per run: ``agent_spec(build)``, where ``build(ctx)`` compiles
the graph for one run.

A loan screener: the graph proposes one ``credit_check`` call itself (a ``ToolNode``
runs it, a TOOL boundary), then asks its chat model for a verdict with the report in
the prompt; the decision is the first of APPROVE and REJECT the model says.

``FAKE`` builds it on LangChain's own fake chat model (``GenericFakeChatModel``), fresh
each run, and lists every ``ctx`` it is given in ``GIVEN``; its screening node reads the
clock through the ``ctx`` it was built with. ``WIRE`` builds it on ``ChatOpenAI`` whose
clients are the run's wire clients (``async_client(ctx, SCREENING_MODEL)``), pointed at
the stand-in server (``examples/local_model_server.py``) on this module's own port:
its answer is REJECT when the prompt's risk is 0.5 or more.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from typing_extensions import TypedDict

from enclave.adapters.http import async_client, client, http_boundary
from enclave.adapters.langgraph import agent_spec
from enclave.capture import Context
from tests.agents.langgraph_agents import WORLD

PORT = 8965  # this module's own: the stand-in server serves it during a test
MODEL = "screening-model-2026-11-01"  # the stand-in's model
CANARY = "CANARY-LANGGRAPH-PER-RUN-3a9d17"  # planted in the credit report's note
SCREENING_MODEL = http_boundary("screening-model")


class CreditReport(TypedDict):
    risk: float
    note: str


@tool
async def credit_check(application: str) -> CreditReport:
    """The applicant's credit report (a stand-in for a credit bureau)."""
    await WORLD.reach("the credit bureau")
    return {"risk": 0.7, "note": f"two missed payments {CANARY}"}


def _lookup(state: MessagesState) -> dict[str, Any]:
    call = {"name": "credit_check", "args": {"application": state["messages"][0].text}}
    return {"messages": [AIMessage(content="", tool_calls=[{**call, "id": "call_credit"}])]}


def screener(chat: BaseChatModel, ctx: Context | None = None) -> Any:
    """The screener's graph on ``chat``; with ``ctx``, its screening node reads the clock
    through it."""

    async def screen(state: MessagesState) -> dict[str, Any]:
        report = json.loads(state["messages"][-1].text)
        day = f" Today is {ctx.now().date()}." if ctx is not None else ""
        prompt = [
            SystemMessage("Screen the application: answer APPROVE or REJECT."),
            HumanMessage(
                f"{state['messages'][0].text} The credit check says risk {report['risk']}.{day}"
            ),
        ]
        return {"messages": [await chat.ainvoke(prompt)]}

    builder = StateGraph(MessagesState)
    builder.add_node("lookup", _lookup)
    builder.add_node("tools", ToolNode([credit_check]))
    builder.add_node("screen", screen)
    builder.add_edge(START, "lookup")
    builder.add_edge("lookup", "tools")
    builder.add_edge("tools", "screen")
    builder.add_edge("screen", END)
    return builder.compile()


def verdict(answer: Any) -> str:
    text = str(answer).upper()
    said = {word: text.find(word) for word in ("APPROVE", "REJECT") if word in text}
    return min(said, key=lambda word: said[word]) if said else "UNDECIDED"


GIVEN: list[Context] = []


def fake_screener(ctx: Context) -> Any:
    GIVEN.append(ctx)
    return screener(GenericFakeChatModel(messages=iter(["REJECT"])), ctx)


FAKE = agent_spec(
    fake_screener,
    name="tests.agents.langgraph_per_run_agents:FAKE",
    version="1.0.0",
    decision=verdict,
)


def wire_screener(ctx: Context) -> Any:
    chat = ChatOpenAI(
        model=MODEL,
        base_url=f"http://127.0.0.1:{PORT}/v1",
        api_key="local-placeholder",  # type: ignore[arg-type]
        max_retries=0,
        http_socket_options=(),
        http_client=client(ctx, SCREENING_MODEL, library="httpx2"),
        http_async_client=async_client(ctx, SCREENING_MODEL, library="httpx2"),
    )
    return screener(chat)


WIRE = agent_spec(
    wire_screener,
    name="tests.agents.langgraph_per_run_agents:WIRE",
    version="1.0.0",
    decision=verdict,
    boundaries=(SCREENING_MODEL,),
    frameworks=("langchain_openai", "httpcore2", "openai", "enclave.adapters.http"),
)
