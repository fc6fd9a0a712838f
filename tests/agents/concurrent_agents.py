"""Asynchronous agents that run a batch of tool calls concurrently, as agent frameworks
do when a model proposes several tool calls at once.

The batch's answers arrive in an order the world decides (each live call sleeps a random
latency), and the agent's result depends on that order: the evidence is listed in
arrival order in the proposal. A replay that
served the batch in any other order than capture's would not reproduce the run.

Live functions are guarded: they raise unless ``with live():`` is active, so a replay
that ever went live would end its run with ``agent_error``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec, BoundarySpec, Context, policy
from ledger import StepKind
from tests.support.live_world import LiveWorld

SUPPLIERS = ("acme", "globex", "initech", "umbrella")
THRESHOLD = 0.5
MAX_LATENCY = 0.004  # seconds: enough to shuffle the arrival order, cheap in a test
# sealed content of every quote: must never appear outside the payload store's ciphertext
CANARY = "CANARY-ASYNC-QUOTE-5d1c9e"

WORLD = LiveWorld(MAX_LATENCY)
live = WORLD.open  # the live world for one capture


async def _answer(response: dict[str, Any]) -> dict[str, Any]:
    await WORLD.reach("a supplier")
    return response


async def _quote(request: Mapping[str, Any]) -> dict[str, Any]:
    supplier = str(request["supplier"])
    return await _answer({"price": 100 + 7 * SUPPLIERS.index(supplier), "terms": CANARY})


async def _rating(request: Mapping[str, Any]) -> dict[str, Any]:
    supplier = str(request["supplier"])
    return await _answer({"rating": round(0.9 - 0.1 * SUPPLIERS.index(supplier), 2)})


QUOTE = BoundarySpec(
    kind=StepKind.TOOL,
    name="quote",
    request={"supplier": policy("internal")},
    response={"price": policy("confidential"), "terms": policy("restricted")},
    json_schema={
        "type": "object",
        "properties": {"price": {"type": "number", "minimum": 0}, "terms": {"type": "string"}},
    },
)
RATING = BoundarySpec(
    kind=StepKind.TOOL,
    name="rating",
    request={"supplier": policy("internal")},
    response={"rating": policy("confidential")},
    json_schema={
        "type": "object",
        "properties": {"rating": {"type": "number", "minimum": 0, "maximum": 1}},
    },
)
INPUTS = {"suppliers": policy("internal")}
OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
    "evidence": policy("internal"),
}


async def _assess(ctx: Context, supplier: str, arrivals: list[str]) -> dict[str, Any]:
    """One tool of the batch: two calls in sequence, the second after the first's answer."""
    price = (await ctx.acall(QUOTE, {"supplier": supplier}, live=_quote))["price"]
    arrivals.append(f"quote:{supplier}")
    rating = (await ctx.acall(RATING, {"supplier": supplier}, live=_rating))["rating"]
    arrivals.append(f"rating:{supplier}")
    return {"supplier": supplier, "value": float(rating) * 100 / float(price)}


async def _batch(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    arrivals: list[str] = []
    assessed = await asyncio.gather(*(_assess(ctx, s, arrivals) for s in inputs["suppliers"]))
    best = max(assessed, key=lambda a: a["value"])
    score = min(1.0, best["value"])
    return {
        "score": score,
        "decision": "BUY" if score >= THRESHOLD else "HOLD",
        # the order the world answered in (the evidence layer is a set: order is not in it)
        "proposal": {"supplier": best["supplier"], "arrivals": arrivals},
        "evidence": arrivals,
    }


def _agent(name: str, function: Any, **declared: Any) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.concurrent_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=(QUOTE, RATING),
        **declared,
    )


BATCH_AGENT = _agent("BATCH_AGENT", _batch)
BATCH_INPUT = {"suppliers": list(SUPPLIERS)}


# -- two agents of one trajectory, concurrently ------------------------------------------


async def _scoped(ctx: Context, supplier: str, arrivals: list[str]) -> None:
    with ctx.agent_scope(supplier):  # each task its own scope, interleaved with the other
        await ctx.acall(QUOTE, {"supplier": supplier}, live=_quote)
        arrivals.append(f"quote:{supplier}:{ctx.agent}")
        await ctx.acall(RATING, {"supplier": supplier}, live=_rating)
        arrivals.append(f"rating:{supplier}:{ctx.agent}")


async def _two_scopes(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    arrivals: list[str] = []
    await asyncio.gather(*(_scoped(ctx, s, arrivals) for s in inputs["suppliers"]))
    return {"score": 0.5, "decision": "BUY", "proposal": {"arrivals": arrivals}, "evidence": []}


SCOPED_AGENT = _agent("SCOPED_AGENT", _two_scopes, scopes=("acme", "globex"))
SCOPED_INPUT = {"suppliers": ["acme", "globex"]}
