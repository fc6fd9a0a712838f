"""The risk screening agent of ``http_agents``, asking its model through the real
anthropic client (on httpx2, the client's own library) against the same local server,
which also speaks the Anthropic messages API. A module of its own: a replay imports the
agent's module in every run, and the openai agents' runs need not import anthropic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anthropic import AsyncAnthropic

from enclave.adapters.http import async_client
from enclave.capture import Context
from tests.agents.http_agents import MODEL, MODEL_NAME, RISK, agent, live_risk


async def _decide_anthropic(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    tool = await ctx.acall(RISK, {"applicant": inputs["applicant"]}, live=live_risk)
    risk, note = float(tool["risk"]), str(tool["note"])
    model = AsyncAnthropic(
        api_key="placeholder-key",  # the local server asks for none
        base_url=str(inputs["base_url"]).removesuffix("/v1"),
        http_client=async_client(ctx, MODEL, library="httpx2"),  # the client's own library
        max_retries=0,
    )
    message = await model.messages.create(
        model=MODEL_NAME,
        max_tokens=16,
        messages=[{"role": "user", "content": f"risk of the applicant {risk}"}],
    )
    block = message.content[0]
    decision = block.text if block.type == "text" else ""
    return {
        "score": risk,
        "decision": decision,
        "proposal": {"decision": decision, "note_length": len(note)},
        "evidence": [],
    }


# this module imports the openai agents' module too: the worker's template imports both
# clients, once
ANTHROPIC_AGENT = agent(
    "ANTHROPIC_AGENT", _decide_anthropic, module=__name__, clients=("openai", "anthropic")
)
