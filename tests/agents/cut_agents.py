"""Small agents that declare replay cuts, for ``test_cuts`` (and the cut benchmark).

``COUNTED``: the work before its cut is a lookup plus ``WORK`` rounds of hashing, each
call of the work counted in ``WORK_DONE`` (in the process that runs it); after the cut a
jitter draw and a policy with a deterministic substitute. ``RANDOM_FIRST`` draws its
randomness before the cut. The misuse agents break one rule of ``ctx.cut`` each.

Register them by reference, e.g. ``tests.agents.cut_agents:COUNTED``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

CANARY = "CANARY-CUT-5d20b7"
WORK_DONE: list[str] = []  # one entry per run of the counted work (this process only)
THRESHOLD = 0.5


def _rounds(seed_text: str, rounds: int) -> str:
    digest = seed_text.encode()
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


def _policy(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"decision": "HIGH" if request["score"] >= THRESHOLD else "LOW"}


LOOKUP = BoundarySpec(
    kind=StepKind.RETRIEVAL,
    name="lookup",
    request={"key": policy("internal")},
    response={"value": policy("confidential"), "note": policy("restricted")},
)
DECIDE = BoundarySpec(
    kind=StepKind.AUTHORITY,
    name="decide",
    request={"score": policy("internal")},
    response={"decision": policy("internal")},
    json_schema={"type": "object", "properties": {"decision": {"enum": ["HIGH", "LOW"]}}},
    substitute=_policy,
)


def _lookup(request: Mapping[str, Any]) -> Answer:
    return Answer({"value": 0.55, "note": f"looked up {request['key']} {CANARY}-note"})


def _counted(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        WORK_DONE.append("work")
        found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
        return {
            "value": found["value"],
            "digest": _rounds(str(found["note"]), int(inputs["rounds"])),
            "note": found["note"],
        }

    state = ctx.cut("before-authority", work)
    score = min(1.0, max(0.0, state["value"] + ctx.random().uniform(-0.1, 0.1)))
    decision = ctx.call(DECIDE, {"score": score}, live=lambda req: Answer(_policy(req, None)))[
        "decision"
    ]
    return {"score": score, "decision": decision, "proposal": {"decision": decision}}


def _random_first(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    jitter = ctx.random().uniform(-0.1, 0.1)
    state = ctx.cut(
        "before-authority",
        lambda: ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"],
    )
    score = min(1.0, max(0.0, state + jitter))
    decision = ctx.call(DECIDE, {"score": score}, live=lambda req: Answer(_policy(req, None)))[
        "decision"
    ]
    return {"score": score, "decision": decision, "proposal": {"decision": decision}}


_INPUTS = {"key": policy("internal"), "rounds": policy("internal")}
_OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
}


def _agent(name: str, function: Any, cuts: tuple[str, ...] = ("before-authority",)) -> AgentSpec:
    return AgentSpec(
        name=name,
        version="1",
        function=function,
        inputs=_INPUTS,
        outcome=_OUTCOME,
        boundaries=(LOOKUP, DECIDE),
        cuts=cuts,
    )


COUNTED = _agent("cut-counted", _counted)
RANDOM_FIRST = _agent("cut-random-first", _random_first)


def _outcome(ctx: Context) -> dict[str, Any]:
    return {"score": 0.5, "decision": "LOW", "proposal": {"decision": "LOW"}}


def _undeclared(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.cut("somewhere-else", lambda: 1)
    return _outcome(ctx)


def _twice(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.cut("first", lambda: 1)
    ctx.cut("first", lambda: 2)
    return _outcome(ctx)


def _out_of_order(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.cut("second", lambda: 1)
    ctx.cut("first", lambda: 2)
    return _outcome(ctx)


def _nested(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.cut("second", lambda: ctx.cut("first", lambda: 1))
    return _outcome(ctx)


def _no_json(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.cut("first", lambda: {"when": object()})
    return _outcome(ctx)


MISUSES = {
    "undeclared": _agent("cut-undeclared", _undeclared, ("first",)),
    "twice": _agent("cut-twice", _twice, ("first",)),
    "out-of-order": _agent("cut-out-of-order", _out_of_order, ("first", "second")),
    "nested": _agent("cut-nested", _nested, ("first", "second")),
    "no-json": _agent("cut-no-json", _no_json, ("first",)),
}

BASELINE_INPUTS = {"key": "K-7", "rounds": 10}


# -- irreversible effects and the sealed auditability -----------------------------------


def _pay_dry_run(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"receipt": f"dry-run {request['amount']}"}


def _payment(substitute: bool) -> BoundarySpec:
    return BoundarySpec(
        kind=StepKind.EFFECT,
        name="pay",
        request={"amount": policy("internal")},
        response={"receipt": policy("internal")},
        substitute=_pay_dry_run if substitute else None,
        irreversible=True,
    )


PAY_DRY_RUN = _payment(substitute=True)
PAY_FOR_REAL = _payment(substitute=False)


def _paying(spec: BoundarySpec, *, cut_first: bool) -> Any:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        def look() -> Any:
            return ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"]

        value = ctx.cut("before-effect", look) if cut_first else look()
        ctx.call(
            spec,
            {"amount": 10},
            live=lambda req: Answer({"receipt": "r-1"}, idempotency_token="pay-1"),
        )
        if not cut_first:
            ctx.cut("before-effect", lambda: value)
        return {"score": 0.5, "decision": "LOW", "proposal": {"decision": "LOW"}}

    return run


def _paying_agent(name: str, spec: BoundarySpec, *, cut_first: bool) -> AgentSpec:
    return AgentSpec(
        name=name,
        version="1",
        function=_paying(spec, cut_first=cut_first),
        inputs=_INPUTS,
        outcome=_OUTCOME,
        boundaries=(LOOKUP, spec),
        cuts=("before-effect",),
    )


# name -> (agent, the sealed class)
PAYING = {
    "dry-run after a cut": (
        _paying_agent("pay-dry-cut", PAY_DRY_RUN, cut_first=True),
        "auditable",
    ),
    "no dry-run after a cut": (
        _paying_agent("pay-real-cut", PAY_FOR_REAL, cut_first=True),
        "not-auditable-beyond before-effect",
    ),
    "dry-run without a cut before": (
        _paying_agent("pay-dry-nocut", PAY_DRY_RUN, cut_first=False),
        "not-auditable-beyond start",
    ),
}
