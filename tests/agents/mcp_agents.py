"""Agents that use the MCP client directly, captured with ``enclave.adapters.mcp``.

A procurement agent asks an MCP server for two suppliers' quotes and ratings (the SDK's
``ClientSession.call_tool``; the session sends a hidden ``tools/list`` to validate the
first result's output schema), then buys from the supplier of best value (rating per
price) when that value is high enough. The decision reads each quote's
``structuredContent``; a quote's terms carry a canary and decide nothing.

``AGENT`` reaches an in-process ``MCPServer`` whose tools raise unless ``with live():``
is active (a replay that ever called one ends with ``agent_error``). ``STDIO_AGENT``
reaches the same tools in a stdio subprocess (``mcp_quote_server.py``), which leaves a
marker file in ``MARKERS`` each time it starts.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp import MCPError, StdioServerParameters
from mcp.server import MCPServer
from pydantic import BaseModel

from enclave.adapters.mcp import server_boundary, session
from enclave.capture import AgentSpec, Context, policy
from tests.support.live_world import LiveWorld

SUPPLIERS = ("acme", "globex")
THRESHOLD = 0.5
CANARY_PROMPT = "CANARY-MCP-PROMPT-41c7aa"  # planted in the order
CANARY_TERMS = "CANARY-MCP-TERMS-5d0e8a"  # planted in every quote the server returns
CANARIES = (CANARY_PROMPT, CANARY_TERMS)
INPUT = {"input": f"Order PO-7731: 40 pallets, note {CANARY_PROMPT}", "quantity": 40}

WORLD = LiveWorld(0.002)
live = WORLD.open  # the live world for one capture

# where the stdio server leaves a marker each time it starts
MARKERS = Path(tempfile.gettempdir()) / "replay-enclave-mcp-markers"
SERVER_SCRIPT = Path(__file__).with_name("mcp_quote_server.py")


class Quote(BaseModel):
    supplier: str
    price: float
    terms: str


quotes = MCPServer("quotes")


@quotes.tool()
async def quote(supplier: str, quantity: int) -> Quote:
    """A supplier's current quote for the order."""
    await WORLD.reach("a supplier")
    price = 100.0 + 70.0 * SUPPLIERS.index(supplier) + (5.0 if quantity > 100 else 0.0)
    return Quote(supplier=supplier, price=price, terms=f"net 30 {CANARY_TERMS}")


@quotes.tool()
async def rating(supplier: str) -> float:
    """The supplier's delivery rating, 0 to 1."""
    await WORLD.reach("a supplier")
    return round(0.9 - 0.1 * SUPPLIERS.index(supplier), 2)


QUOTES = server_boundary("quotes", output_schemas={"quote": Quote.model_json_schema()})


def stdio_server() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(SERVER_SCRIPT)], env={"MCP_MARKERS": str(MARKERS)}
    )


def _rating(result: Any) -> float:
    # a tool returning a bare value answers ``{"result": value}``
    return float(result.structured_content["result"])


async def procure(ctx: Context, server: Any, quantity: int) -> dict[str, Any]:
    async with session(ctx, QUOTES, server) as client:
        values: dict[str, float] = {}
        prices: dict[str, float] = {}
        for supplier in SUPPLIERS:
            arguments = {"supplier": supplier, "quantity": quantity}
            quoted = await client.call_tool("quote", arguments)
            prices[supplier] = float(quoted.structured_content["price"])
            rated = await client.call_tool("rating", {"supplier": supplier})
            values[supplier] = _rating(rated) * 100 / prices[supplier]
    best = max(SUPPLIERS, key=lambda s: values[s])
    score = round(min(1.0, values[best]), 6)
    decision = "BUY" if score >= THRESHOLD else "HOLD"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"supplier": best, "price": prices[best]},
        "evidence": ["quotes"],
    }


async def _in_process(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return await procure(ctx, quotes, int(inputs["quantity"]))


async def _stdio(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return await procure(ctx, stdio_server(), int(inputs["quantity"]))


def _spec(name: str, function: Any) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.mcp_agents:{name}",
        version="1.0.0",
        function=function,
        inputs={"input": policy("confidential"), "quantity": policy("confidential")},
        outcome={
            "score": policy("internal"),
            "decision": policy("internal"),
            "proposal": policy("confidential"),
            "evidence": policy("internal"),
        },
        boundaries=(QUOTES,),
        frameworks=("mcp", "enclave.adapters.mcp"),
    )


async def _extra_call(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    outcome = await procure(ctx, quotes, int(inputs["quantity"]))
    async with session(ctx, QUOTES, quotes) as client:  # a request the record never saw
        await client.call_tool("rating", {"supplier": "initech"})
    return outcome


async def _handles_an_error(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    async with session(ctx, QUOTES, quotes) as client:
        try:
            await client.read_resource("quotes://missing")
        except MCPError as exc:
            code = exc.code  # the server's JSON-RPC error, handled by the agent
        else:
            raise AssertionError("the resource exists")
    return {"score": 0.0, "decision": f"error {code}", "proposal": {}, "evidence": []}


AGENT = _spec("AGENT", _in_process)
STDIO_AGENT = _spec("STDIO_AGENT", _stdio)
# the in-process agent with one more request at the end: unservable at replay
EXTRA_CALL_AGENT = _spec("EXTRA_CALL_AGENT", _extra_call)
ERROR_AGENT = _spec("ERROR_AGENT", _handles_an_error)
