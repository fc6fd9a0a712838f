"""A small LangChain agent, written as its documentation writes agents, captured and
replayed unchanged: a support-ticket router.

``create_agent`` builds the agent (a compiled LangGraph graph). The model asks the
``sentiment`` tool about the customer's note, then answers with a JSON routing:
ESCALATE when the urgency is at least 0.6, else QUEUE. ``agent_spec`` derives the
``AgentSpec``: the tool is a sealed boundary whose result an audit can change
(``--call main/sentiment#0 --field /output/label``).

The model is a scripted tool-calling chat model that runs in process (as LangChain's
own tests write one: ``bind_tools`` returns itself), so it is agent code. The hosted form
— ``ChatOpenAI`` pointed at ``examples/local_model_server.py``, declared a model
boundary — is ``examples/langgraph_hosted_agent.py``.

    PYTHONPATH=examples replay-enclave capture langgraph_agent:AGENT --input run.json
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from typing_extensions import TypedDict

from enclave.adapters.langgraph import agent_spec

ESCALATE_AT = 0.6


class Sentiment(TypedDict):
    label: Literal["negative", "neutral", "positive"]
    confidence: float


@tool
async def sentiment(note: str) -> Sentiment:
    """The sentiment of a customer's note (a stand-in for a sentiment service)."""
    negative = any(word in note for word in ("refund", "broken", "angry"))
    return {"label": "negative" if negative else "neutral", "confidence": 0.8}


def route(messages: Sequence[BaseMessage]) -> AIMessage:
    """The model's side: ask for the note's sentiment, then route on it."""
    returns = [m for m in messages if isinstance(m, ToolMessage) and m.name == "sentiment"]
    if not returns:
        note = next(m.text for m in messages if isinstance(m, HumanMessage))
        call = {"name": "sentiment", "args": {"note": note}, "id": "call_sentiment"}
        return AIMessage(content="", tool_calls=[call])
    label = json.loads(returns[0].text)["label"]
    urgency = 0.4 + (0.3 if label == "negative" else 0.0)
    routing = {
        "decision": "ESCALATE" if urgency >= ESCALATE_AT else "QUEUE",
        "urgency": urgency,
        "reason": f"the customer sounds {label}",
    }
    return AIMessage(content=json.dumps(routing))


class RouterModel(BaseChatModel):
    """A tool-calling chat model that runs in process: each turn is ``route``'s."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=route(messages))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    @property
    def _llm_type(self) -> str:
        return "router"


support_agent = create_agent(
    RouterModel(),
    tools=[sentiment],
    system_prompt="Route the ticket: escalate an unhappy customer.",
)

AGENT = agent_spec(
    support_agent,
    name="langgraph-router",
    version="1.0.0",
    decision="decision",
    score="urgency",
)
