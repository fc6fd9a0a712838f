"""An agent whose counterfactual rests on a substitute's answer to a request it was never
checked on, with the true answer known by construction.

A router looks up a case's value, asks a rating service about the value's band and
routes the case on the rating plus a seeded jitter of ±0.2: ``HOLD`` at 0.5 or above,
else ``PASS``. Live, the rating service answers 0.9 for band "high" and 0.4 for band
"low". Its declared substitute is a frozen table that answers 0.9 whatever it is asked:
faithful on the recorded request (band "high", value 0.8), wrong off it.

Replacing the value with 0.2 makes the agent ask about band "low", a request the record
does not hold. Live, the rating is then 0.4 and the case is held on about half of the
seeds (0.6) and passed on the rest (0.2); the substitute's 0.9 holds it on every seed.

Live calls raise outside ``with live():``, so a replay that went live would fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

NAME = "tests.agents.validity_substitute_agents:EXTRAPOLATED_AGENT"
LIVE_RATING = {"high": 0.9, "low": 0.4}

_override: dict[str, Any] | None = None  # the live value's replacement (the intervention)
_live_allowed = False


@contextmanager
def live(*, value: float | None = None) -> Iterator[None]:
    """Live calls allowed; ``value`` replaces the looked-up value (the intervention)."""
    global _override, _live_allowed
    previous = (_override, _live_allowed)
    _override, _live_allowed = ({"value": value} if value is not None else None), True
    try:
        yield
    finally:
        _override, _live_allowed = previous


def _guard() -> None:
    if not _live_allowed:
        raise RuntimeError("a live service was called outside capture")


def _lookup_service(request: Mapping[str, Any]) -> Answer:
    _guard()
    return Answer({"value": 0.8, **(_override or {})}, resolved="lookup@1")


def _rating_service(request: Mapping[str, Any]) -> Answer:
    _guard()
    return Answer({"rating": LIVE_RATING[str(request["band"])]}, resolved="rating@3")


def frozen_rating(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    """The declared substitute: the one answer the record shows, for any band."""
    return {"rating": 0.9}


LOOKUP = BoundarySpec(
    kind=StepKind.TOOL,
    name="lookup",
    request={"case": policy("internal")},
    response={"value": policy("confidential")},
    json_schema={
        "type": "object",
        "properties": {"value": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["value"],
    },
)
RATING = BoundarySpec(
    kind=StepKind.TOOL,
    name="rating",
    request={"band": policy("internal")},
    response={"rating": policy("internal")},
    substitute=frozen_rating,
)


def route(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = float(ctx.call(LOOKUP, {"case": inputs["case"]}, live=_lookup_service)["value"])
    band = "high" if value >= 0.5 else "low"
    rating = float(ctx.call(RATING, {"band": band}, live=_rating_service)["rating"])
    jitter = ctx.random().choice([-0.2, 0.2])
    decision = "HOLD" if rating + jitter >= 0.5 else "PASS"
    return {"decision": decision, "proposal": {"decision": decision}, "evidence": ["rating"]}


EXTRAPOLATED_AGENT = AgentSpec(
    name=NAME,
    version="1.0.0",
    function=route,
    inputs={"case": policy("internal")},
    outcome={
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    score_bounds=None,
    boundaries=(LOOKUP, RATING),
)

INPUTS = {"case": "case-0042"}
RECORDED_SEED = 5
