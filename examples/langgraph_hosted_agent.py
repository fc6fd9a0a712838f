"""The hosted form of a LangGraph agent: a loan screener whose chat model is
``langchain_openai.ChatOpenAI`` pointed at a local OpenAI-compatible server
(``local_model``: llama.cpp's server with a small real model, or the stand-in
``examples/local_model_server.py``).

A model that small does not call tools: the graph looks the applicant up itself — its
first node proposes the one ``credit_check`` call, a ``ToolNode`` runs it (a TOOL
boundary, as every tool of a ``ToolNode``) — and the model reads the credit report in
its prompt. A model that small does not keep to a format it is asked for either: its
answer is held to a JSON schema (``response_format``, which the server enforces while
the model writes), so the decision is APPROVE or REJECT, whatever the model's reasons
(``verdict``).

``HOSTED`` declares the model a hosted boundary (``model="screener"``): its answers are
recorded at capture and served at replay, and the server is never asked again.

``WIRE`` is the same screener with its model captured at the wire: the graph is built
for each run (``wire_screener(ctx)``) with the model's clients on the wire adapter
(``async_client(ctx, SCREENING_MODEL)``), so each exchange with the server is recorded
as it was sent and answered — the form governed inference can ask again when an
intervention on the credit report changes what the model is asked.

    python examples/local_model_server.py --port 8931 &
    PYTHONPATH=examples replay-enclave capture langgraph_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from local_model import API_KEY, MODEL, URL
from typing_extensions import TypedDict

from enclave.adapters.http import async_client, client, http_boundary
from enclave.adapters.langgraph import agent_spec
from enclave.capture import Context

INSTRUCTIONS = "Screen the loan application. Answer with one word: APPROVE or REJECT."
# the answer's form, enforced by the server as the model writes (a grammar, in llama.cpp)
VERDICT = {
    "type": "json_schema",
    "json_schema": {
        "name": "Verdict",
        "schema": {
            "type": "object",
            "properties": {"decision": {"type": "string", "enum": ["APPROVE", "REJECT"]}},
            "required": ["decision"],
            "additionalProperties": False,
        },
    },
}


class CreditReport(TypedDict):
    risk: float
    note: str


@tool
async def credit_check(application: str) -> CreditReport:
    """The applicant's credit report (a stand-in for a credit bureau)."""
    return {"risk": 0.7, "note": "two missed payments this year"}


def look_up(state: MessagesState) -> dict[str, Any]:
    """The graph's own first step: one ``credit_check`` call for the application."""
    call = {"name": "credit_check", "args": {"application": state["messages"][0].text}}
    return {"messages": [AIMessage(content="", tool_calls=[{**call, "id": "call_credit"}])]}


def screener_graph(chat: BaseChatModel) -> Any:
    """The screener on ``chat``: look the applicant up, then ask the model."""

    async def screen(state: MessagesState) -> dict[str, Any]:
        report = json.loads(state["messages"][-1].text)
        prompt = [
            SystemMessage(INSTRUCTIONS),
            HumanMessage(
                f"{state['messages'][0].text}\n"
                f"Credit report: risk {report['risk']}, {report['note']}."
            ),
        ]
        return {"messages": [await chat.bind(response_format=VERDICT).ainvoke(prompt)]}

    builder = StateGraph(MessagesState)
    builder.add_node("look_up", look_up)
    builder.add_node("tools", ToolNode([credit_check]))
    builder.add_node("screen", screen)
    builder.add_edge(START, "look_up")
    builder.add_edge("look_up", "tools")
    builder.add_edge("tools", "screen")
    builder.add_edge("screen", END)
    return builder.compile()


def verdict(answer: Any) -> str:
    """The answer's ``decision``; from a server that does not keep to the schema (the
    stand-in), the first of APPROVE and REJECT its text says; UNDECIDED if neither."""
    if isinstance(answer, Mapping):
        answer = answer.get("decision")
    text = str(answer).upper()
    said = {word: text.find(word) for word in ("APPROVE", "REJECT") if word in text}
    return min(said, key=lambda word: said[word]) if said else "UNDECIDED"


def chat_model(**clients: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        base_url=os.environ.get("LOCAL_MODEL_URL", URL),
        api_key=API_KEY,  # type: ignore[arg-type]
        max_retries=0,  # a retry's timing is the client's, not the run's
        temperature=0.0,
        max_completion_tokens=24,
        # no keepalive probe: built with its defaults, ChatOpenAI opens a throwaway TCP
        # socket to test them, and a replay worker ends any run that opens one
        http_socket_options=(),
        **clients,
    )


screener = screener_graph(chat_model())

HOSTED = agent_spec(
    screener,
    name="langgraph-screener",
    version="1.0.0",
    decision=verdict,
    model="screener",
    # the provider's package and the transport core its client imports when first built:
    # imported once by the replay worker's template, not by every run
    frameworks=("langchain_openai", "httpcore2"),
)

SCREENING_MODEL = http_boundary("screening-model")


def wire_screener(ctx: Context) -> Any:
    """The graph of ``WIRE``, built for one run: its model's clients on the wire adapter
    (``httpx2``, the library the installed openai client is built on)."""
    return screener_graph(
        chat_model(
            http_client=client(ctx, SCREENING_MODEL, library="httpx2"),
            http_async_client=async_client(ctx, SCREENING_MODEL, library="httpx2"),
        )
    )


WIRE = agent_spec(
    wire_screener,
    name="langgraph-screener-wire",
    version="1.0.0",
    decision=verdict,
    boundaries=(SCREENING_MODEL,),
    frameworks=("langchain_openai", "httpcore2", "openai", "enclave.adapters.http"),
)
