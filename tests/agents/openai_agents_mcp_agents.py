"""An OpenAI Agents SDK agent whose tools come from an MCP server (``Agent.mcp_servers``),
captured with ``enclave.adapters.openai_agents``.

The buyer's server is an ``MCPServerStdio`` running ``mcp_quote_server.py``; its model
(``agents.testing.ScriptedModel``) asks for acme's quote through the server's ``quote``
tool, then answers BUY when the quoted price is at most ``PRICE_LIMIT``, else HOLD. The
server passes its structured result to the model (``use_structured_content=True``), so
the verdict depends on the quote's structured price.

``AGENT`` connects to the stdio subprocess at capture; ``IN_PROCESS`` names the same
tools served in process (``tests.agents.mcp_agents.quotes``, live only inside
``with live():``) as the server's capture target. Neither ever connects at replay.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from agents import Agent
from agents.mcp import MCPServerStdio
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from enclave.adapters.openai_agents import agent_spec
from tests.agents import mcp_agents as ma

PRICE_LIMIT = 120.0
INPUT = {"input": f"Buy 40 pallets from acme. Reference {ma.CANARY_PROMPT}."}
CANARIES = ma.CANARIES
live = ma.live
# a folder of this module's own: the MCP client tests count their server's starts in
# theirs, possibly at the same time on another test worker
MARKERS = ma.MARKERS.with_name(ma.MARKERS.name + "-agents-sdk")


class Verdict(BaseModel):
    decision: Literal["BUY", "HOLD"]
    supplier: str
    price: float


quotes_server = MCPServerStdio(
    name="quotes",
    params={
        "command": sys.executable,
        "args": [str(ma.SERVER_SCRIPT)],
        "env": {"MCP_MARKERS": str(MARKERS)},
    },
    use_structured_content=True,
)

buyer = Agent(
    name="buyer",
    instructions="Get acme's quote for the order, then decide BUY or HOLD.",
    mcp_servers=[quotes_server],
    output_type=Verdict,
)


def _quoted(call: ModelCall) -> dict[str, Any]:
    for item in call.input:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            if item["call_id"] == "q1":
                output: dict[str, Any] = json.loads(item["output"])
                return output
    raise LookupError("the model was shown no quote")


def _verdict(call: ModelCall) -> Any:
    price = float(_quoted(call)["price"])
    decision = "BUY" if price <= PRICE_LIMIT else "HOLD"
    verdict = {"decision": decision, "supplier": "acme", "price": price}
    return [assistant_message(json.dumps(verdict, separators=(",", ":")))]


def scripted() -> ScriptedModel:
    """The model of one run: ask for acme's quote, then decide on its price."""
    return ScriptedModel(
        [
            [function_call("quote", {"supplier": "acme", "quantity": 40}, call_id="q1")],
            ModelStep.respond(_verdict),
        ]
    )


SCHEMAS = {"quotes": {"quote": ma.Quote.model_json_schema()}}

AGENT = agent_spec(
    buyer,
    name="tests.agents.openai_agents_mcp_agents:AGENT",
    version="1.0.0",
    model=scripted,
    decision="decision",
    mcp_schemas=SCHEMAS,
)
IN_PROCESS = agent_spec(
    buyer,
    name="tests.agents.openai_agents_mcp_agents:IN_PROCESS",
    version="1.0.0",
    model=scripted,
    decision="decision",
    mcp_targets={"quotes": ma.quotes},
    mcp_schemas=SCHEMAS,
)
