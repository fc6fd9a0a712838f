"""Agents written the way the OpenAI Agents SDK documents them, captured with
``enclave.adapters.openai_agents``.

A triage agent hands off to a buyer; the buyer's model proposes two tool calls in one
turn (a price quote and a rating: a parallel batch the SDK runs concurrently), then
answers with a typed ``Verdict``: BUY when the quoted price is at most ``PRICE_LIMIT``
and the rating at least ``RATING_FLOOR``, else HOLD. The model is
``agents.testing.ScriptedModel``; its last step reads the tool results from the call it
is given, so the verdict depends on them (and not on the quote's terms).

The tools' live answers are guarded: they raise unless ``with live():`` is active, and
each sleeps a random latency, so the batch's answers arrive in an order the world
decides. Canaries are planted in the prompt and in a tool result.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agents import Agent, RunContextWrapper, function_tool
from agents.models.interface import Model
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel
from typing_extensions import TypedDict

from enclave.adapters.openai_agents import agent_spec
from enclave.capture import BoundarySpec, Context, policy
from ledger import StepKind
from tests.support.live_world import LiveWorld

PRICE_LIMIT = 120.0
RATING_FLOOR = 0.5
PRICES = {"acme": 100.0, "globex": 140.0}
RATINGS = {"acme": 0.8, "globex": 0.9}
MAX_LATENCY = 0.004
# sealed content: never anywhere outside the payload store's ciphertext
CANARY_PROMPT = "CANARY-OAI-PROMPT-7c41d2"
CANARY_TERMS = "CANARY-OAI-TERMS-93be05"
PROMPT = f"Buy 40 pallets from acme. Reference {CANARY_PROMPT}."
INPUT = {"input": PROMPT}

WORLD = LiveWorld(MAX_LATENCY)
live = WORLD.open  # the live world for one capture


class Quote(TypedDict):
    price: float
    terms: str


class Rating(TypedDict):
    rating: float


class Verdict(BaseModel):
    decision: Literal["BUY", "HOLD"]
    supplier: str
    price: float


@function_tool
async def quote(supplier: str) -> Quote:
    """Ask a supplier for its price quote.

    Args:
        supplier: The supplier's name.
    """
    await WORLD.reach("quotes")
    return {"price": PRICES[supplier], "terms": f"net 30, {CANARY_TERMS}"}


@function_tool
async def rating(supplier: str) -> Rating:
    """Look up a supplier's delivery rating.

    Args:
        supplier: The supplier's name.
    """
    await WORLD.reach("ratings")
    return {"rating": RATINGS[supplier]}


buyer = Agent(
    name="buyer",
    instructions="Get a quote and a rating for the supplier, then decide BUY or HOLD.",
    tools=[quote, rating],
    output_type=Verdict,
)
triage = Agent(
    name="triage",
    instructions="Hand purchase requests to the buyer.",
    handoffs=[buyer],
)


def _results(call: ModelCall) -> dict[str, Any]:
    """The tool results the model was shown, by call id."""
    outputs = {}
    for item in call.input:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            outputs[item["call_id"]] = ast.literal_eval(item["output"])
    return outputs


def _limit(call: ModelCall) -> float:
    """The price limit the instructions name (``at most N``), else the desk's own."""
    words = (call.system_instructions or "").split()
    if "most" in words:
        return float(words[words.index("most") + 1].rstrip("."))
    return PRICE_LIMIT


def _verdict(call: ModelCall) -> Any:
    results = _results(call)
    price, score = float(results["q1"]["price"]), float(results["r1"]["rating"])
    decision = "BUY" if price <= _limit(call) and score >= RATING_FLOOR else "HOLD"
    verdict = {"decision": decision, "supplier": "acme", "price": price}
    return [assistant_message(json.dumps(verdict, separators=(",", ":")))]


def _steps() -> list[Any]:
    return [
        [function_call("transfer_to_buyer", {}, call_id="h1")],
        [
            function_call("quote", {"supplier": "acme"}, call_id="q1"),
            function_call("rating", {"supplier": "acme"}, call_id="r1"),
        ],
        ModelStep.respond(_verdict),
    ]


def scripted() -> Model:
    """The model of one run: hand off, ask for a quote and a rating at once, decide."""
    return ScriptedModel(_steps())


class _Peeking(ScriptedModel):
    """A model that, as agent code, reads the live quote service itself."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        WORLD.check("quotes")
        return await super().get_response(*args, **kwargs)


def peeking() -> Model:
    return _Peeking(_steps())


# -- a boundary the adapter does not know: a purchasing policy read by dynamic instructions

POLICY = BoundarySpec(
    kind=StepKind.RETRIEVAL,
    name="policy",
    request={"topic": policy("internal")},
    response={"limit": policy("confidential")},
    json_schema={"type": "object", "properties": {"limit": {"type": "number", "minimum": 0}}},
)


@dataclass
class Desk:
    """The SDK's run context: the run's ``ctx``, for code the SDK calls."""

    ctx: Context


async def _policy(request: Mapping[str, Any]) -> dict[str, Any]:
    WORLD.check("policy")
    return {"limit": PRICE_LIMIT}


async def policed_instructions(wrapper: RunContextWrapper[Desk], agent: Agent[Desk]) -> str:
    answer = await wrapper.context.ctx.acall(POLICY, {"topic": "price"}, live=_policy)
    return f"Get a quote and a rating, then BUY when the price is at most {answer['limit']}."


policed_buyer = buyer.clone(instructions=policed_instructions)


def policed() -> Model:
    return ScriptedModel(_steps()[1:])  # no handoff: the buyer is asked directly


# the model runs in the agent's code: tool results are the boundaries
AGENT = agent_spec(
    triage,
    name="tests.agents.openai_agents_agents:AGENT",
    version="1.0.0",
    model=scripted,
    decision="decision",
)
# the model is a hosted boundary (ScriptedModel stands in for it): its answers are
# recorded and served; the tools are boundaries too
HOSTED = agent_spec(
    triage,
    name="tests.agents.openai_agents_agents:HOSTED",
    version="1.0.0",
    model=scripted,
    hosted="gpt-4.1",
    decision="decision",
)
# the buyer alone, its instructions read from the purchasing policy through ctx
POLICED = agent_spec(
    policed_buyer,
    name="tests.agents.openai_agents_agents:POLICED",
    version="1.0.0",
    model=policed,
    decision="decision",
    context=lambda ctx, inputs: Desk(ctx),
    boundaries=(POLICY,),
)
# agent code that reaches a live service outside ctx: a replay must abort
PEEKING = agent_spec(
    triage,
    name="tests.agents.openai_agents_agents:PEEKING",
    version="1.0.0",
    model=peeking,
    decision="decision",
)
