"""Agents that try to carry content out through what the worker sends back.

Each is captured harmlessly (the same outcome as ``PLAIN_AGENT``) and turns hostile only
when replayed. What each tries to smuggle is ``CANARY`` (or, for numbers, digits the
supervisor must not pass on at full precision):

* ``FAILURE_CODE_AGENT``  raises an enclave error whose code and text are the canary;
* ``NEW_SCOPE_AGENT``     after departure, calls an effect under an agent scope named by
                          the canary (a call id that exists only in the replay);
* ``PROPOSAL_KEY_AGENT``  adds a proposal key named by the canary;
* ``SCORE_DIGITS_AGENT``  adds 17 significant digits of its choosing to the score;
* ``PATCH_REPLY_AGENT``   tampers with its run's own report so every run reports
                          canary-named live-state reads;
* ``PATCH_FLOOD_AGENT``   the same, with names from the specimen but a huge list;
* ``BIG_INT_AGENT``       returns 2**60 in its proposal (beyond what JSON carries exactly).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from enclave.capture import AgentSpec, BoundarySpec, Context, policy
from enclave.replay import BranchError
from ledger import StepKind
from tests.agents import replay_agents as base

CANARY = "CANARY-BNDRY-71c0aa"
DIGITS = 0.012345678901234567  # what SCORE_DIGITS_AGENT adds to its score

_LOOKUP_LIVE = base._lookup  # noqa: SLF001 - the guarded live function of the shared agents

SMUGGLE = BoundarySpec(
    kind=StepKind.EFFECT,
    name="smuggle",
    request={"key": policy("internal")},
    response={"ok": policy("internal")},
    side_effecting=True,
)


class _Smuggled(BranchError):
    code = f"code-{CANARY}"


def _departed(found: Mapping[str, Any]) -> bool:
    """True on the intervened branch (the tests replace the looked-up value)."""
    return float(found["value"]) != 0.8


def _run(
    ctx: Context, inputs: Mapping[str, Any], act: Callable[[Context, dict[str, Any]], None]
) -> dict[str, Any]:
    found = ctx.call(base.LOOKUP, {"key": inputs["key"]}, live=_LOOKUP_LIVE)
    outcome = base._outcome(float(found["value"]) + ctx.random().uniform(-0.01, 0.01))
    if base.replaying(ctx):
        act(ctx, outcome)
    return outcome


def _spec(name: str, act: Callable[[Context, dict[str, Any]], None]) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.boundary_reply_agents:{name}",
        version="1.0.0",
        function=lambda ctx, inputs: _run(ctx, inputs, act),
        inputs=base.INPUTS,
        outcome=base.OUTCOME,
        boundaries=(base.LOOKUP, SMUGGLE),
    )


def _raise_code(ctx: Context, outcome: dict[str, Any]) -> None:
    raise _Smuggled(f"text-{CANARY}")


def _new_scope(ctx: Context, outcome: dict[str, Any]) -> None:
    if outcome["score"] < 0.5:  # only the intervened branch (value 0.2) gets here
        with ctx.agent_scope(f"scope-{CANARY}"):
            ctx.call(SMUGGLE, {"key": "k"}, live=_LOOKUP_LIVE)


def _proposal_key(ctx: Context, outcome: dict[str, Any]) -> None:
    outcome["proposal"] = {**outcome["proposal"], f"key-{CANARY}": 1}


def _score_digits(ctx: Context, outcome: dict[str, Any]) -> None:
    outcome["score"] = outcome["score"] + DIGITS


def _patch_reply(names: Callable[[], list[list[str]]]) -> Callable[[Context, dict[str, Any]], None]:
    """Tamper with the run's own report from inside: the process a run executes in sends
    whatever its agent makes of it, so the template and the supervisor must refuse it."""

    def act(ctx: Context, outcome: dict[str, Any]) -> None:
        reads = getattr(ctx, "live_state_reads", None)
        if isinstance(reads, list):
            reads.extend(tuple(pair) for pair in names())

    return act


def _big_int(ctx: Context, outcome: dict[str, Any]) -> None:
    outcome["proposal"] = {**outcome["proposal"], "amount": 2**60}


FAILURE_CODE_AGENT = _spec("FAILURE_CODE_AGENT", _raise_code)
NEW_SCOPE_AGENT = _spec("NEW_SCOPE_AGENT", _new_scope)
PROPOSAL_KEY_AGENT = _spec("PROPOSAL_KEY_AGENT", _proposal_key)
SCORE_DIGITS_AGENT = _spec("SCORE_DIGITS_AGENT", _score_digits)
PATCH_REPLY_AGENT = _spec(
    "PATCH_REPLY_AGENT", _patch_reply(lambda: [[f"main/{CANARY}#0", f"/{CANARY}"]])
)
PATCH_FLOOD_AGENT = _spec(
    "PATCH_FLOOD_AGENT", _patch_reply(lambda: [["main/lookup#0", "/value"]] * 5000)
)
BIG_INT_AGENT = _spec("BIG_INT_AGENT", _big_int)
