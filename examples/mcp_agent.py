"""A small agent that uses the MCP client directly, captured and replayed with
``enclave.adapters.mcp``: a purchasing desk.

It asks the quote server (``examples/mcp_quote_server.py``, started as a stdio
subprocess at capture) for two suppliers' quotes and ratings, then buys from the supplier
of best value (rating per price) when that value is high enough. Every request the
session sends — the handshake, each ``tools/call``, the ``tools/list`` the SDK sends to
validate a structured result — is one call of the ``quotes`` boundary; at replay they are
served from the record and no server process starts. An audit can change a quote's
structured price (``--call main/quotes#1 --field /result/structuredContent/price``).

    PYTHONPATH=examples replay-enclave capture mcp_agent:AGENT --input run.json
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters
from pydantic import BaseModel

from enclave.adapters.mcp import server_boundary, session
from enclave.capture import AgentSpec, Context, policy

SUPPLIERS = ("acme", "globex")
BUY_AT = 0.5  # rating points per 100 of price


class Quote(BaseModel):
    supplier: str
    price: float
    terms: str


QUOTES = server_boundary("quotes", output_schemas={"quote": Quote.model_json_schema()})
SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("mcp_quote_server.py"))]
)


async def purchase(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    quantity = int(inputs["quantity"])
    values: dict[str, float] = {}
    prices: dict[str, float] = {}
    async with session(ctx, QUOTES, SERVER) as client:
        for supplier in SUPPLIERS:
            quoted = await client.call_tool("quote", {"supplier": supplier, "quantity": quantity})
            prices[supplier] = float(quoted.structured_content["price"])
            rated = await client.call_tool("rating", {"supplier": supplier})
            values[supplier] = float(rated.structured_content["result"]) * 100 / prices[supplier]
    best = max(SUPPLIERS, key=lambda s: values[s])
    score = round(min(1.0, values[best]), 6)
    return {
        "score": score,
        "decision": "BUY" if score >= BUY_AT else "HOLD",
        "proposal": {"supplier": best, "price": prices[best], "quantity": quantity},
        "evidence": ["quotes"],
    }


AGENT = AgentSpec(
    name="mcp-purchasing-desk",
    version="1.0.0",
    function=purchase,
    inputs={"order": policy("confidential"), "quantity": policy("confidential")},
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("confidential"),
        "evidence": policy("internal"),
    },
    boundaries=(QUOTES,),
    # imported once by the replay worker's template, not in every run
    frameworks=("mcp", "enclave.adapters.mcp"),
)
