"""A loan-screening agent on the plain openai client, captured at the wire.

It asks a risk tool about the applicant, then asks a hosted chat model for the decision.
The model is a boundary: its client sends every request through ``async_client(ctx,
MODEL)``, so capture records each exchange (credentials never) and a replay answers it
from the record — a request the record does not hold ends the branch ``unservable``.

    python examples/local_model_server.py &
    PYTHONPATH=examples replay-enclave capture openai_client_agent:AGENT --input run.json
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai import AsyncOpenAI

from enclave.adapters.http import async_client, http_boundary
from enclave.capture import AgentSpec, BoundarySpec, Context, policy
from ledger import StepKind

RISK = BoundarySpec(
    kind=StepKind.TOOL,
    name="risk",
    request={"applicant": policy("internal")},
    response={"risk": policy("confidential"), "note": policy("restricted")},
    json_schema={
        "type": "object",
        "properties": {
            "risk": {"type": "number", "minimum": 0, "maximum": 1},
            "note": {"type": "string"},
        },
    },
)
MODEL = http_boundary("screening-model")


async def _risk_service(request: Mapping[str, Any]) -> dict[str, Any]:
    """The live tool (a stand-in here): called at capture, never at replay."""
    return {"risk": 0.72, "note": f"bureau file of {request['applicant']}: two defaults"}


async def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    tool = await ctx.acall(RISK, {"applicant": inputs["applicant"]}, live=_risk_service)
    model = AsyncOpenAI(
        base_url=str(inputs["base_url"]),
        api_key="local-no-key",  # the local server asks for none; a real key is never recorded
        http_client=async_client(ctx, MODEL),
        max_retries=0,  # a retry's timing is the client's, not the run's
    )
    completion = await model.chat.completions.create(
        model="screening-model-2026-11-01",
        messages=[{"role": "user", "content": f"Screen the applicant: risk {tool['risk']}"}],
    )
    decision = str(completion.choices[0].message.content)
    return {
        "score": float(tool["risk"]),
        "decision": decision,
        "proposal": {"decision": decision, "applicant": inputs["applicant"]},
        "evidence": ["risk", "screening-model"],
    }


AGENT = AgentSpec(
    name="openai-client-screening",
    version="1.0.0",
    function=run,
    inputs={"applicant": policy("internal"), "base_url": policy("internal")},
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    boundaries=(RISK, MODEL),
    frameworks=("openai", "enclave.adapters.http"),
)
