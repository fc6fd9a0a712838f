"""A complete small agent to copy from: a support-ticket router.

It asks a sentiment tool about the customer's note, scores how urgent the ticket is,
and routes it: ESCALATE when urgency >= 0.6, else QUEUE. Every crossing goes through
``ctx.call`` with a declared boundary; time and randomness come from the context, so a
replay is deterministic. The note itself is restricted: it is captured encrypted and
never shown.

    PYTHONPATH=examples replay-enclave capture hello_agent:AGENT --input run.json
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

ESCALATE_AT = 0.6

SENTIMENT = BoundarySpec(
    kind=StepKind.TOOL,
    name="sentiment",
    request={"note": policy("restricted")},
    response={"label": policy("confidential"), "confidence": policy("internal")},
    schema_id="sentiment-service",
    schema_version="1",
    aliases=("sentiment-service",),
    identities=("sentiment@2.3",),
    json_schema={
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["negative", "neutral", "positive"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["label", "confidence"],
    },
)


def _sentiment_service(request: Mapping[str, Any]) -> Answer:
    """The live tool (a stand-in here): called at capture, never at replay."""
    negative = any(word in request["note"] for word in ("refund", "broken", "angry"))
    label = "negative" if negative else "neutral"
    return Answer({"label": label, "confidence": 0.8}, resolved="sentiment@2.3")


def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    sentiment = ctx.call(
        SENTIMENT, {"note": inputs["note"]}, live=_sentiment_service, alias="sentiment-service"
    )
    urgency = 0.4 + (0.3 if sentiment["label"] == "negative" else 0.0)
    urgency += ctx.random().uniform(-0.02, 0.02)
    decision = "ESCALATE" if urgency >= ESCALATE_AT else "QUEUE"
    return {
        "score": round(urgency, 6),
        "decision": decision,
        "proposal": {"decision": decision, "ticket": inputs["ticket"]},
        "evidence": ["sentiment-service"],
    }


AGENT = AgentSpec(
    name="hello-router",
    version="1.0.0",
    function=run,
    inputs={"ticket": policy("internal"), "note": policy("restricted")},
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    boundaries=(SENTIMENT,),
)
