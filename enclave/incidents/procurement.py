"""Procurement approval: a decider scores a supplier purchase order.

score = 0.500 + model calibration (r1 +0.020, r2 -0.018)
              + template calibration (c1 +0.012, c2 +0.018)
              + 0.20 x (supplier confidence - 0.50)
              + jitter, jitter = Random(seed).uniform(-0.028, 0.028)
decision = APPROVE if score >= policy threshold 0.55 else REVIEW

Cuts: ``before-retrieval`` holds the template; ``before-authority`` holds everything the
score needs but the jitter (documents, supplier risk, the decider's answer), so a replay
from it re-draws the jitter per sample and decides again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger import StepKind

from ..capture import AgentSpec, Answer, BoundarySpec, Context, RevisionPoint, policy

MODEL_CALIBRATION = {"r1": 0.020, "r2": -0.018}
TEMPLATE_CALIBRATION = {"c1": 0.012, "c2": 0.018}
THRESHOLD = 0.55
CANARY = "CANARY-PROC-2f9c1e"

_TEMPLATES = {
    rev: f"Purchase order review template {rev}. Weigh supplier risk. {CANARY}-template"
    for rev in TEMPLATE_CALIBRATION
}


def template_substitute(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    rev = resolved or "c1"
    return {"template": _TEMPLATES[rev], "calibration": TEMPLATE_CALIBRATION[rev]}


def model_substitute(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    # A frozen table of the decider's revisions: deterministic at temperature 0.
    rev = resolved or "r1"
    return {
        "rationale": f"assessment by {rev} ({CANARY}-rationale)",
        "calibration": MODEL_CALIBRATION[rev],
    }


def approval_policy(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    decision = "APPROVE" if request["score"] >= THRESHOLD else "REVIEW"
    return {"decision": decision, "threshold": THRESHOLD}


TEMPLATE = BoundarySpec(
    kind=StepKind.CONTEXT,
    name="po-template",
    request={"purpose": policy("internal")},
    response={"template": policy("confidential"), "calibration": policy("internal")},
    schema_id="po-template",
    schema_version="1",
    substitute=template_substitute,
    aliases=("po-template@current",),  # identities: the template revision point's
)
RETRIEVAL = BoundarySpec(
    kind=StepKind.RETRIEVAL,
    name="supplier-docs",
    request={"query": policy("confidential")},
    response={"snapshot": policy("internal"), "documents": policy("confidential")},
    schema_id="supplier-docs",
    schema_version="1",
    aliases=("supplier-index@prod",),
    identities=("snap-20261102",),
)
SUPPLIER_RISK = BoundarySpec(
    kind=StepKind.TOOL,
    name="supplier_risk",
    request={"supplier": policy("internal")},
    response={
        "supplier": policy("internal"),
        "confidence": policy("confidential"),
        "analyst_note": policy("restricted"),
        "scoring_memo": policy("restricted", "withheld"),
    },
    schema_id="supplier-risk",
    schema_version="2",
    bundles={"assessment": ("confidence", "analyst_note")},
    identities=("supplier-risk-svc@4.2.0",),
    json_schema={
        "type": "object",
        "properties": {
            "supplier": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1, "x-neutral": 0.5},
            "analyst_note": {"type": "string"},
        },
        "required": ["supplier", "confidence"],
    },
)
DECIDER = BoundarySpec(
    kind=StepKind.MODEL,
    name="decider",
    request={"prompt": policy("confidential"), "temperature": policy("public")},
    response={"rationale": policy("confidential"), "calibration": policy("internal")},
    schema_id="decider-chat",
    schema_version="1",
    substitute=model_substitute,
    aliases=("decider",),  # identities: the model revision point's
)
APPROVAL = BoundarySpec(
    kind=StepKind.AUTHORITY,
    name="approval-policy",
    request={
        "score": policy("internal"),
        "subject": policy("internal"),
        "purpose": policy("internal"),
    },
    response={"decision": policy("internal"), "threshold": policy("internal")},
    schema_id="approval-policy",
    schema_version="3",
    json_schema={
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["APPROVE", "REVIEW"]},
            "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["decision", "threshold"],
    },
    substitute=approval_policy,
    aliases=("approval-policy@active",),
    identities=("approval-policy@p3",),
)


class LiveWorld:
    """The services a procurement agent talks to in production (simulated)."""

    def __init__(
        self, *, model_revision: str = "r1", template_revision: str = "c1", confidence: float = 0.70
    ) -> None:
        self.model_revision, self.template_revision, self.confidence = (
            model_revision,
            template_revision,
            confidence,
        )

    def template(self, request: Mapping[str, Any]) -> Answer:
        return Answer(
            template_substitute(request, self.template_revision), resolved=self.template_revision
        )

    def retrieve(self, request: Mapping[str, Any]) -> Answer:
        docs = [
            {"id": "doc-118", "text": f"Supplier audit 2025: no findings. {CANARY}-doc1"},
            {"id": "doc-342", "text": f"Delivery record: 97% on time. {CANARY}-doc2"},
        ]
        return Answer(
            {"snapshot": "supplier-index@2026-11-02", "documents": docs}, resolved="snap-20261102"
        )

    def supplier_risk(self, request: Mapping[str, Any]) -> Answer:
        return Answer(
            {
                "supplier": request["supplier"],
                "confidence": self.confidence,
                "analyst_note": f"Watch list review pending. {CANARY}-note",
                "scoring_memo": f"Internal memo not retained. {CANARY}-memo",
            },
            resolved="supplier-risk-svc@4.2.0",
        )

    def decide(self, request: Mapping[str, Any]) -> Answer:
        return Answer(model_substitute(request, self.model_revision), resolved=self.model_revision)

    def authorize(self, request: Mapping[str, Any]) -> Answer:
        return Answer(approval_policy(request, "p3"), resolved="approval-policy@p3")


def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    world = LiveWorld(
        model_revision=inputs.get("live_model_revision", "r1"),
        template_revision=inputs.get("live_template_revision", "c1"),
        confidence=inputs.get("live_supplier_confidence", 0.70),
    )
    template = ctx.cut(
        "before-retrieval",
        lambda: dict(
            ctx.call(
                TEMPLATE,
                {"purpose": inputs["purpose"]},
                live=world.template,
                alias="po-template@current",
            )
        ),
    )

    def assess() -> dict[str, Any]:
        docs = ctx.call(
            RETRIEVAL,
            {"query": f"supplier {inputs['subject']}"},
            live=world.retrieve,
            alias="supplier-index@prod",
        )
        risk = ctx.call(SUPPLIER_RISK, {"supplier": inputs["subject"]}, live=world.supplier_risk)
        evidence = f"Evidence: {len(docs['documents'])} documents"
        prompt = f"{template['template']}\nPO: {inputs['po_text']}\n{evidence}"
        model = ctx.call(
            DECIDER, {"prompt": prompt, "temperature": 0}, live=world.decide, alias="decider"
        )
        return {
            "model_calibration": model["calibration"],
            "confidence": risk["confidence"],
            "evidence": [doc["id"] for doc in docs["documents"]],
        }

    assessed = ctx.cut("before-authority", assess)
    jitter = ctx.random().uniform(-0.028, 0.028)
    score = (
        0.500
        + assessed["model_calibration"]
        + template["calibration"]
        + 0.20 * (assessed["confidence"] - 0.50)
        + jitter
    )
    decision = ctx.call(
        APPROVAL,
        {"score": score, "subject": inputs["subject"], "purpose": inputs["purpose"]},
        live=world.authorize,
        alias="approval-policy@active",
    )
    return {
        "score": score,
        "decision": decision["decision"],
        "proposal": {
            "decision": decision["decision"],
            "subject": inputs["subject"],
            "amount": inputs["amount"],
        },
        "evidence": assessed["evidence"],
    }


AGENT = AgentSpec(
    name="procurement",
    version="1.0.0",
    function=run,
    inputs={
        "po_id": policy("internal"),
        "subject": policy("internal"),
        "amount": policy("confidential"),
        "purpose": policy("internal"),
        "po_text": policy("restricted"),
        "live_model_revision": policy("internal"),
        "live_template_revision": policy("internal"),
        "live_supplier_confidence": policy("confidential"),
    },
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("confidential"),
        "evidence": policy("internal"),
    },
    revisions={
        "model": RevisionPoint("decider", tuple(MODEL_CALIBRATION)),
        "template": RevisionPoint("po-template", tuple(TEMPLATE_CALIBRATION)),
    },
    boundaries=(TEMPLATE, RETRIEVAL, SUPPLIER_RISK, DECIDER, APPROVAL),
    cuts=("before-retrieval", "before-authority"),
)

BASELINE_INPUT = {
    "tenant": "acme",
    "seed": 41,
    "inputs": {
        "po_id": "PO-2291",
        "subject": "supplier-074",
        "amount": 48250.0,
        "purpose": "purchase-order-review",
        "po_text": f"Replacement valves for plant 3, net 30. {CANARY}-po",
    },
}
