"""A small pydantic-ai agent, written as its documentation writes agents, captured and
replayed unchanged: a support-ticket router.

The model (a scripted ``FunctionModel`` here, in place of a hosted one) asks the
``sentiment`` tool about the customer's note, then answers with a typed ``Routing``:
ESCALATE when the urgency is at least 0.6, else QUEUE. ``agent_spec`` derives the
``AgentSpec``: the tool is a sealed boundary whose typed result an audit can change
(``--call main/sentiment#0 --field /output/label``).

``pydantic_ai_hosted_agent.py`` is the router on a hosted model.

    PYTHONPATH=examples replay-enclave capture pydantic_ai_agent:AGENT --input run.json
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from enclave.adapters.pydantic_ai import agent_spec

ESCALATE_AT = 0.6


class Sentiment(BaseModel):
    label: Literal["negative", "neutral", "positive"]
    confidence: float


class Routing(BaseModel):
    decision: Literal["ESCALATE", "QUEUE"]
    urgency: float
    reason: str = Field(max_length=80)


@dataclass
class Customer:
    tier: Literal["standard", "premium"]


def router_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model's side: ask for the note's sentiment, then route on it."""
    returns = [
        part
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "sentiment"
    ]
    if not returns:
        note = str(messages[0].parts[-1].content)  # the user prompt
        return ModelResponse(parts=[ToolCallPart("sentiment", {"note": note})])
    sentiment = Sentiment.model_validate(returns[0].content)
    urgency = 0.4 + (0.3 if sentiment.label == "negative" else 0.0)
    routing = Routing(
        decision="ESCALATE" if urgency >= ESCALATE_AT else "QUEUE",
        urgency=urgency,
        reason=f"the customer sounds {sentiment.label}",
    )
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, routing.model_dump())])


support_agent = Agent(
    FunctionModel(router_model),
    deps_type=Customer,
    output_type=Routing,
    instructions="Route the ticket: escalate an unhappy customer.",
)


@support_agent.tool
async def sentiment(ctx: RunContext[Customer], note: str) -> Sentiment:
    """The sentiment of a customer's note (a stand-in for a sentiment service)."""
    negative = any(word in note for word in ("refund", "broken", "angry"))
    confidence = 0.9 if ctx.deps.tier == "premium" else 0.8
    return Sentiment(label="negative" if negative else "neutral", confidence=confidence)


AGENT = agent_spec(
    support_agent,
    name="pydantic-ai-router",
    version="1.0.0",
    decision="decision",
    score="urgency",
    deps=lambda inputs: Customer(tier=inputs.get("tier", "standard")),
    extra_inputs=("tier",),
)
