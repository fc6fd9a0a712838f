"""An agent whose outcome is categorical: a decision and no numeric score.

A router reads a risk tier from a tool and routes the case: ``HOLD`` for tier "high",
else ``PASS``. It declares ``score_bounds=None`` and its outcome carries no score, so
an audit compares it by decision equality and flip rate only. The tool's confidence is
never read: changing it cannot change the decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

TIER = BoundarySpec(
    kind=StepKind.TOOL,
    name="risk_tier",
    request={"case": policy("internal")},
    response={"tier": policy("internal"), "confidence": policy("internal")},
    json_schema={
        "type": "object",
        "properties": {
            "tier": {"type": "string", "enum": ["low", "high"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["tier", "confidence"],
    },
)


def _tier_service(request: Mapping[str, Any]) -> Answer:
    del request
    return Answer({"tier": "high", "confidence": 0.9})


def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    tier = ctx.call(TIER, {"case": inputs["case"]}, live=_tier_service)
    ctx.random().random()  # a sample's own seed: the runs depart at this draw
    decision = "HOLD" if tier["tier"] == "high" else "PASS"
    return {"decision": decision, "proposal": {"decision": decision}, "evidence": ["risk_tier"]}


CATEGORICAL_AGENT = AgentSpec(
    name="categorical-router",
    version="1.0.0",
    function=run,
    inputs={"case": policy("internal")},
    outcome={
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    score_bounds=None,
    boundaries=(TIER,),
)

BASELINE_INPUTS = {"case": "case-0042"}
