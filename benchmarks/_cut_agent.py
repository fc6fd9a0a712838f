"""The agent of benchmark (d) (``_cuts``): its expensive part precedes its cut.

A lookup, then ``rounds`` rounds of SHA-256 over the answer, inside
``ctx.cut("before-authority", ...)``; after the cut a jitter draw and a policy decision
with a deterministic substitute. Kept apart from ``_cuts`` so that the replayed runs
import only the capture SDK. Registered by reference: ``benchmarks._cut_agent:HEAVY``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

CUT = "before-authority"
LOOKUP = BoundarySpec(
    kind=StepKind.RETRIEVAL,
    name="lookup",
    request={"key": policy("internal")},
    response={"value": policy("confidential")},
)


def _policy(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"decision": "HIGH" if request["score"] >= 0.5 else "LOW"}


DECIDE = BoundarySpec(
    kind=StepKind.AUTHORITY,
    name="decide",
    request={"score": policy("internal")},
    response={"decision": policy("internal")},
    json_schema={"type": "object", "properties": {"decision": {"enum": ["HIGH", "LOW"]}}},
    substitute=_policy,
)


def _run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    def expensive() -> dict[str, Any]:
        value = ctx.call(LOOKUP, {"key": inputs["key"]}, live=lambda r: Answer({"value": 0.6}))
        digest = str(value["value"]).encode()
        for _ in range(int(inputs["rounds"])):
            digest = hashlib.sha256(digest).digest()
        return {"value": value["value"], "digest": digest.hex()}

    state = ctx.cut(CUT, expensive)
    score = min(1.0, max(0.0, state["value"] + ctx.random().uniform(-0.2, 0.2)))
    decision = ctx.call(DECIDE, {"score": score}, live=lambda r: Answer(_policy(r, None)))
    return {"score": score, "decision": decision["decision"]}


HEAVY = AgentSpec(
    name="bench-heavy-before-cut",
    version="1",
    function=_run,
    inputs={"key": policy("internal"), "rounds": policy("internal")},
    outcome={"score": policy("internal"), "decision": policy("internal")},
    boundaries=(LOOKUP, DECIDE),
    cuts=(CUT,),
)
