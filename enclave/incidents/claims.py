"""Claims review: the agent reads a fraud score and recommends manual review above a
threshold. score = fraud score (0 when absent) + Random(seed).uniform(-0.01, 0.01),
clamped to [0, 1]; the review policy says MANUAL_REVIEW when score >= 0.70.

Cut: ``before-authority`` holds the fraud service's score; the jitter is drawn after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger import StepKind

from ..capture import AgentSpec, Answer, BoundarySpec, Context, policy

THRESHOLD = 0.70
CANARY = "CANARY-CLAIM-8b41d0"


def review_policy(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    decision = "MANUAL_REVIEW" if request["score"] >= THRESHOLD else "AUTO_APPROVE"
    return {"decision": decision, "threshold": THRESHOLD}


FRAUD = BoundarySpec(
    kind=StepKind.TOOL,
    name="fraud_score",
    request={"claim_id": policy("internal")},
    response={
        "fraud_score": policy("confidential"),
        "signals": policy("restricted"),
        "model": policy("internal"),
    },
    schema_id="fraud-service",
    schema_version="5",
    aliases=("fraud-service",),
    identities=("fraud-svc@7.1",),
    json_schema={
        "type": "object",
        "properties": {
            "fraud_score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
            "signals": {"type": "array"},
            "model": {"type": "string"},
        },
        "required": ["fraud_score"],
    },
)
REVIEW = BoundarySpec(
    kind=StepKind.AUTHORITY,
    name="review-policy",
    request={"score": policy("internal"), "claim_id": policy("internal")},
    response={"decision": policy("internal"), "threshold": policy("internal")},
    schema_id="review-policy",
    schema_version="2",
    json_schema={
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["MANUAL_REVIEW", "AUTO_APPROVE"]},
            "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["decision", "threshold"],
    },
    substitute=review_policy,
    identities=("review-policy@v2",),
)


def _fraud_service(request: Mapping[str, Any]) -> Answer:
    return Answer(
        {
            "fraud_score": 0.82,
            "signals": [f"velocity anomaly {CANARY}-signal", "address reuse"],
            "model": "fraud-gbm-7",
        },
        resolved="fraud-svc@7.1",
    )


def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    raw = ctx.cut(
        "before-authority",
        lambda: ctx.call(
            FRAUD, {"claim_id": inputs["claim_id"]}, live=_fraud_service, alias="fraud-service"
        )["fraud_score"],
    )
    base = 0.0 if raw is None else float(raw)
    score = min(1.0, max(0.0, base + ctx.random().uniform(-0.01, 0.01)))
    decision = ctx.call(
        REVIEW,
        {"score": score, "claim_id": inputs["claim_id"]},
        live=lambda req: Answer(review_policy(req, "v2"), resolved="review-policy@v2"),
    )
    return {
        "score": score,
        "decision": decision["decision"],
        "proposal": {"decision": decision["decision"], "claim_id": inputs["claim_id"]},
        "evidence": ["fraud-service"],
    }


AGENT = AgentSpec(
    name="claims",
    version="1.0.0",
    function=run,
    inputs={
        "claim_id": policy("internal"),
        "claimant": policy("restricted"),
        "narrative": policy("restricted"),
    },
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    boundaries=(FRAUD, REVIEW),
    cuts=("before-authority",),
)

BASELINE_INPUT = {
    "tenant": "acme",
    "seed": 7,
    "inputs": {
        "claim_id": "CLM-50713",
        "claimant": f"Jordan Example {CANARY}-name",
        "narrative": f"Water damage in basement after storm. {CANARY}-narrative",
    },
}
