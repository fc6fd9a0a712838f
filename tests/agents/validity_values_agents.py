"""Agents whose true causal answer is known by construction, for the validity tests.

Each is deterministic and reads what it was served exactly as it was produced:

* ``SHAPE_AGENT`` branches on ``isinstance(amount, float)`` and on the first key of the
  ``ranking`` object. A replay that hands back ``1`` for ``1.0`` or a re-sorted object
  takes the other branch, so its baseline cannot reproduce.
* ``TWICE_AGENT`` asks the same model twice; only the second answer decides. A revision
  swap that reached the first call only would leave the decision unchanged.
* ``LIMITS_AGENT`` decides on the nested leaf ``/limits/daily``.

``live_outcome`` runs an agent's function live with an intervention applied to the live
answer: that is the truth an audit's answer is checked against.

Register them by reference, e.g. ``tests.agents.validity_values_agents:SHAPE_AGENT``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, RevisionPoint, policy
from ledger import StepKind
from tests.agents.replay_agents import INPUTS, OUTCOME, _guarded, _outcome

# -- shape: float-ness and key order ------------------------------------------------------

QUOTE = BoundarySpec(
    kind=StepKind.TOOL,
    name="quote",
    request={"key": policy("internal")},
    response={"amount": policy("confidential"), "ranking": policy("confidential")},
)


def _quote_answer(request: Mapping[str, Any]) -> Answer:
    # integral float, and an object whose first key is not its first in sorted order
    return Answer({"amount": 1.0, "ranking": {"zeta": 3, "alpha": 1, "mid": 2.0}})


_quote = _guarded("quote", _quote_answer)


def _shape(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = ctx.call(QUOTE, {"key": inputs["key"]}, live=_quote)
    score = 0.2
    if isinstance(found["amount"], float):
        score += 0.3
    if next(iter(found["ranking"])) == "zeta":
        score += 0.3
    if isinstance(found["ranking"]["mid"], float):
        score += 0.1
    return _outcome(score + ctx.random().uniform(-0.001, 0.001))


# -- twice: a revision point called more than once ----------------------------------------

# what each model revision answers per round; r2 differs only in the decisive round
_VERDICTS = {
    "m1": {"draft": "approve", "final": "approve"},
    "m2": {"draft": "approve", "final": "reject"},
}


def _advise(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"verdict": _VERDICTS[resolved or "m1"][str(request["round"])]}


ADVISOR = BoundarySpec(
    kind=StepKind.MODEL,
    name="advisor",
    request={"round": policy("internal")},
    response={"verdict": policy("confidential")},
    substitute=_advise,
    identities=("m1", "m2"),
)

_advisor = _guarded("advisor", lambda req: Answer(_advise(req, "m1"), resolved="m1"))


def _twice(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ADVISOR, {"round": "draft"}, live=_advisor)  # read, never decisive
    final = ctx.call(ADVISOR, {"round": "final"}, live=_advisor)
    score = 0.8 if final["verdict"] == "approve" else 0.2
    return _outcome(score + ctx.random().uniform(-0.001, 0.001))


# -- limits: a nested target ---------------------------------------------------------------

_LIMIT = {"type": "number", "minimum": 0, "maximum": 1}
ACCOUNT = BoundarySpec(
    kind=StepKind.TOOL,
    name="account",
    request={"key": policy("internal")},
    response={"limits": policy("confidential"), "owner": policy("restricted")},
    schema_id="account",
    schema_version="1",
    json_schema={
        "type": "object",
        "properties": {
            "limits": {
                "type": "object",
                "properties": {
                    "daily": _LIMIT,
                    "weekly": _LIMIT,
                    "a/b~c": _LIMIT,  # a key that needs JSON Pointer escapes
                },
            },
            "owner": {"type": "string"},
        },
    },
    bundles={"caps": ("/limits/daily", "/limits/weekly")},
)


def _account_answer(request: Mapping[str, Any]) -> Answer:
    return Answer(
        {"limits": {"daily": 0.8, "weekly": 0.9, "a/b~c": 0.5}, "owner": "acct-holder"},
        resolved="account-svc@1",
    )


_account = _guarded("account", _account_answer)


def _limits(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = ctx.call(ACCOUNT, {"key": inputs["key"]}, live=_account)
    return _outcome(float(found["limits"]["daily"]) + ctx.random().uniform(-0.001, 0.001))


def _spec(
    name: str,
    function: Callable[[Context, Mapping[str, Any]], dict[str, Any]],
    boundaries: tuple[BoundarySpec, ...],
    **extra: Any,
) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.validity_values_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=boundaries,
        code_modules=("tests.agents.replay_agents",),
        **extra,
    )


SHAPE_AGENT = _spec("SHAPE_AGENT", _shape, (QUOTE,))
TWICE_AGENT = _spec(
    "TWICE_AGENT",
    _twice,
    (ADVISOR,),
    revisions={"model": RevisionPoint("advisor", ("m1", "m2"))},
)
LIMITS_AGENT = _spec("LIMITS_AGENT", _limits, (ACCOUNT,))


# -- the truth: run live, with the intervention applied to the live answer ---------------

# (call id, boundary, request, live response) -> the response the agent is given
Change = Callable[[str, BoundarySpec, Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


class _LiveContext(Context):
    def __init__(self, seed: int, change: Change) -> None:
        super().__init__()
        self._seed, self._change = seed, change

    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: Any,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        answer = live(request)
        response = answer.response if isinstance(answer, Answer) else answer
        return self._change(self._next_call_id(spec.name), spec, request, response)

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def random(self, stream: str | None = None) -> random.Random:
        # the SDK's own streams (one per run, named sub-streams), with nothing to record
        return self._stream(stream, self._seed, lambda request: None)


def live_decision(agent: AgentSpec, inputs: Mapping[str, Any], *, seed: int, change: Change) -> str:
    """The decision ``agent`` reaches when run live with ``change`` applied to every answer."""
    from tests.agents.replay_agents import capturing

    with capturing():
        outcome = agent.function(_LiveContext(seed, change), inputs)
    return str(outcome["decision"])


def unchanged(
    call_id: str, spec: BoundarySpec, request: Mapping[str, Any], response: Mapping[str, Any]
) -> Mapping[str, Any]:
    return response


def model_revision(identity: str) -> Change:
    """Every call to the advisor answered by the model at ``identity``."""

    def change(
        call_id: str, spec: BoundarySpec, request: Mapping[str, Any], response: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        return _advise(request, identity) if spec.name == "advisor" else response

    return change
