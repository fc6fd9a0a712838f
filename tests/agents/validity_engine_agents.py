"""Agents whose true causal answer is known by construction, for the replay engine.

Each agent talks to a small simulated live world. The truth of a counterfactual is the
agent run LIVE (``enclave.capture``) against that world with the intervention applied to
the live response (``live(revision="r2")``, ``live(overrides={"lookup": {...}})``); a
replay of the baseline specimen with the same intervention and seed must give the same
answer, or abstain (``unservable``).

Live functions are guarded: they raise unless ``with live(...):`` is active, so a replay
that ever went live would end its run with ``agent_error``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, RevisionPoint, policy
from ledger import StepKind

CANARY = "CANARY-VENG-41c0d2"
THRESHOLD = 0.5


@dataclass
class World:
    """The live services' state during one capture."""

    revision: str = "r1"  # the model revision the live oracle runs
    # per boundary name: response fields replaced on the live answer (the intervention)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    limit: int = 10  # the store the effect writes and the readback reads
    writes: int = 0
    frozen: bool = False  # the account the freeze writes and the verifier reads


_world: World | None = None


@contextmanager
def live(
    *, revision: str = "r1", overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> Iterator[World]:
    """A fresh live world for one capture; live calls are allowed only inside."""
    global _world
    previous = _world
    _world = World(revision=revision, overrides={k: dict(v) for k, v in (overrides or {}).items()})
    try:
        yield _world
    finally:
        _world = previous


def _live(name: str, answer: Callable[[World, Mapping[str, Any]], Answer]) -> Callable[..., Answer]:
    def call(request: Mapping[str, Any]) -> Answer:
        if _world is None:
            raise RuntimeError(f"live {name} called outside capture {CANARY}-live")
        got = answer(_world, request)
        changed = _world.overrides.get(name)
        if changed:  # the intervention, applied to the live response
            got = replace(got, response={**got.response, **changed})
        return got

    return call


def _outcome(score: float, **proposal: Any) -> dict[str, Any]:
    score = min(1.0, max(0.0, score))
    decision = "HIGH" if score >= THRESHOLD else "LOW"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision, **proposal},
        "evidence": [],
    }


INPUTS = {"key": policy("internal"), "path": policy("internal")}
OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
    "evidence": policy("internal"),
}


def _agent(
    name: str,
    function: Callable[[Context, Mapping[str, Any]], dict[str, Any]],
    boundaries: tuple[BoundarySpec, ...],
    **options: Any,
) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.validity_engine_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=boundaries,
        **options,
    )


# -- 1. a model with revisions, called twice; randomness drawn before it ------------------

# the live model's answer per revision and prompt; the substitute is the same frozen table
BIAS = {"r1": {"draft": 0.0, "final": 0.10}, "r2": {"draft": 0.0, "final": -0.10}}


def oracle_table(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"bias": BIAS[resolved or "r1"][str(request["prompt"])]}


ORACLE = BoundarySpec(
    kind=StepKind.MODEL,
    name="oracle",
    request={"prompt": policy("confidential")},
    response={"bias": policy("internal"), "trace": policy("restricted", "withheld")},
    substitute=oracle_table,
    identities=("r1", "r2"),
)
_oracle = _live(
    "oracle",
    lambda w, req: Answer(
        {**oracle_table(req, w.revision), "trace": f"chain of thought {CANARY}-trace"},
        resolved=w.revision,
    ),
)
MODEL_REVISION = {"model": RevisionPoint("oracle", ("r1", "r2"))}


def _twice(oracle: BoundarySpec) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        # the first call is not decisive; the second, to the same model, is
        ctx.call(oracle, {"prompt": "draft"}, live=_oracle)
        final = ctx.call(oracle, {"prompt": "final"}, live=_oracle)
        return _outcome(0.5 + float(final["bias"]) + ctx.random().uniform(-0.01, 0.01))

    return run


def _random_first(
    oracle: BoundarySpec,
) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        jitter = ctx.random().uniform(-0.01, 0.01)
        final = ctx.call(oracle, {"prompt": "final"}, live=_oracle)
        return _outcome(0.5 + float(final["bias"]) + jitter)

    return run


BARE_ORACLE = replace(ORACLE, substitute=None)  # the same model with no frozen table
RAISING_ORACLE = replace(ORACLE, substitute=lambda request, resolved: {}["bias"])
TWICE_AGENT = _agent("TWICE_AGENT", _twice(ORACLE), (ORACLE,), revisions=MODEL_REVISION)
RANDOM_FIRST_AGENT = _agent(
    "RANDOM_FIRST_AGENT", _random_first(ORACLE), (ORACLE,), revisions=MODEL_REVISION
)
TWICE_BARE_AGENT = _agent(
    "TWICE_BARE_AGENT", _twice(BARE_ORACLE), (BARE_ORACLE,), revisions=MODEL_REVISION
)
RAISING_ORACLE_AGENT = _agent(
    "RAISING_ORACLE_AGENT", _twice(RAISING_ORACLE), (RAISING_ORACLE,), revisions=MODEL_REVISION
)
RANDOM_FIRST_BARE_AGENT = _agent(
    "RANDOM_FIRST_BARE_AGENT",
    _random_first(BARE_ORACLE),
    (BARE_ORACLE,),
    revisions=MODEL_REVISION,
)


# -- 2. an effect and a readback of the state it changed ---------------------------------

LOOKUP = BoundarySpec(
    kind=StepKind.TOOL,
    name="lookup",
    request={"key": policy("internal")},
    response={"value": policy("confidential")},
    json_schema={
        "type": "object",
        "properties": {"value": {"type": "number", "minimum": 0, "maximum": 1}},
    },
)
SET_LIMIT = BoundarySpec(
    kind=StepKind.EFFECT,
    name="set_limit",
    request={"limit": policy("internal")},
    response={"receipt": policy("internal")},
    substitute=lambda request, resolved: {"receipt": "dry-run"},  # a dry-run effect adapter
)
GET_LIMIT = BoundarySpec(
    kind=StepKind.READBACK,
    name="get_limit",
    request={"key": policy("internal")},
    response={"limit": policy("internal")},
    reads_after=("set_limit",),
)
_lookup = _live("lookup", lambda w, req: Answer({"value": 0.8}, resolved="lookup@1"))


def _set(world: World, request: Mapping[str, Any]) -> Answer:
    world.limit = int(request["limit"])
    world.writes += 1
    return Answer({"receipt": "ok"}, resolved="store@1", idempotency_token=f"tok-{world.writes}")


_set_limit = _live("set_limit", _set)
_get_limit = _live("get_limit", lambda w, req: Answer({"limit": w.limit}, resolved="store@1"))


def _skips_write(
    readback: BoundarySpec,
) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        # the write happens only for a high value; the readback sees whether it happened
        value = float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])
        if value >= 0.5:
            ctx.call(SET_LIMIT, {"limit": 90}, live=_set_limit)
        limit = int(ctx.call(readback, {"key": inputs["key"]}, live=_get_limit)["limit"])
        return _outcome(limit / 100 + ctx.random().uniform(-0.001, 0.001))

    return run


def _reads_around_write(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # a readback before and after the write; a very high value skips the first one
    value = float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])
    if value < 0.85:
        ctx.call(GET_LIMIT, {"key": inputs["key"]}, live=_get_limit)
    if value >= 0.5:
        ctx.call(SET_LIMIT, {"limit": 90}, live=_set_limit)
    limit = int(ctx.call(GET_LIMIT, {"key": inputs["key"]}, live=_get_limit)["limit"])
    return _outcome(limit / 100 + ctx.random().uniform(-0.001, 0.001))


def _changes_write(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # the write always happens, with a request that follows the looked-up value
    value = float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])
    ctx.call(SET_LIMIT, {"limit": round(value * 100)}, live=_set_limit)
    limit = int(ctx.call(GET_LIMIT, {"key": inputs["key"]}, live=_get_limit)["limit"])
    return _outcome(limit / 100 + ctx.random().uniform(-0.001, 0.001))


# a readback with a substitute that knows the store's state without the write
GET_LIMIT_FROM_STORE = replace(GET_LIMIT, substitute=lambda request, resolved: {"limit": 10})
STORE = (LOOKUP, SET_LIMIT, GET_LIMIT)
SKIPS_WRITE_AGENT = _agent("SKIPS_WRITE_AGENT", _skips_write(GET_LIMIT), STORE)
SKIPS_WRITE_STORE_AGENT = _agent(
    "SKIPS_WRITE_STORE_AGENT",
    _skips_write(GET_LIMIT_FROM_STORE),
    (LOOKUP, SET_LIMIT, GET_LIMIT_FROM_STORE),
)
READS_AROUND_WRITE_AGENT = _agent("READS_AROUND_WRITE_AGENT", _reads_around_write, STORE)
CHANGES_WRITE_AGENT = _agent("CHANGES_WRITE_AGENT", _changes_write, STORE)


# -- 2b. a fraud flag, the freeze it triggers and a verifier's readback of the account --
# The readback declares no ``reads_after``: a readback reads the world every effect
# before it may have changed, so it is served from the record only after exactly the
# recorded effects. ``notify`` is an effect that does not touch the account.

FRAUD_FLAG = BoundarySpec(
    kind=StepKind.TOOL,
    name="fraud_flag",
    request={"key": policy("internal")},
    response={"flagged": policy("confidential"), "channel": policy("internal")},
    json_schema={
        "type": "object",
        "properties": {
            "flagged": {"type": "boolean"},
            "channel": {"type": "string", "enum": ["email", "sms"]},
        },
    },
)
FREEZE = BoundarySpec(
    kind=StepKind.EFFECT,
    name="freeze_account",
    request={"key": policy("internal")},
    response={"receipt": policy("internal")},
    substitute=lambda request, resolved: {"receipt": "dry-run"},
)
NOTIFY = BoundarySpec(
    kind=StepKind.EFFECT,
    name="notify",
    request={"key": policy("internal"), "channel": policy("internal")},
    response={"receipt": policy("internal")},
    substitute=lambda request, resolved: {"receipt": "dry-run"},
)
ACCOUNT = BoundarySpec(
    kind=StepKind.READBACK,
    name="account_state",
    request={"key": policy("internal")},
    response={"state": policy("internal")},
)
# the same readback, declared to depend on the freeze alone (a narrowing)
ACCOUNT_AFTER_FREEZE = replace(ACCOUNT, reads_after=("freeze_account",))
# the same readback with a substitute that knows the account as it is without a freeze
ACCOUNT_FROM_STORE = replace(ACCOUNT, substitute=lambda request, resolved: {"state": "active"})
# a static reference table, read through a readback boundary; no effect writes it
LIMITS = BoundarySpec(
    kind=StepKind.READBACK,
    name="limits_table",
    request={"table": policy("internal")},
    response={"limit": policy("internal")},
    effect_independent=True,
)
_fraud_flag = _live(
    "fraud_flag", lambda w, req: Answer({"flagged": True, "channel": "email"}, resolved="flags@1")
)


def _freeze(world: World, request: Mapping[str, Any]) -> Answer:
    world.frozen = True
    world.writes += 1
    return Answer({"receipt": "ok"}, resolved="accounts@1", idempotency_token=f"f-{world.writes}")


_freeze_account = _live("freeze_account", _freeze)
_notify = _live(
    "notify",
    lambda w, req: Answer({"receipt": "sent"}, resolved="mail@1", idempotency_token="n-1"),
)
_limits = _live("limits_table", lambda w, req: Answer({"limit": 250}, resolved="limits@1"))
_account = _live(
    "account_state",
    lambda w, req: Answer({"state": "frozen" if w.frozen else "active"}, resolved="accounts@1"),
)


def _freezes(
    account: BoundarySpec, limits: BoundarySpec
) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        key = inputs["key"]
        flag = ctx.call(FRAUD_FLAG, {"key": key}, live=_fraud_flag)
        if flag["flagged"]:
            ctx.call(FREEZE, {"key": key}, live=_freeze_account)
        ctx.call(NOTIFY, {"key": key, "channel": flag["channel"]}, live=_notify)
        limit = int(ctx.call(limits, {"table": "limits"}, live=_limits)["limit"])
        state = str(ctx.call(account, {"key": key}, live=_account)["state"])
        # the verifier's decision: held while the account reads frozen
        score = (0.9 if state == "frozen" else 0.1) + ctx.random().uniform(-0.001, 0.001)
        return _outcome(score, state=state, limit=limit)

    return run


def _freeze_agent(name: str, account: BoundarySpec, limits: BoundarySpec = LIMITS) -> AgentSpec:
    boundaries = (FRAUD_FLAG, FREEZE, NOTIFY, limits, account)
    return _agent(name, _freezes(account, limits), boundaries)


FREEZE_AGENT = _freeze_agent("FREEZE_AGENT", ACCOUNT)
FREEZE_NARROWED_AGENT = _freeze_agent("FREEZE_NARROWED_AGENT", ACCOUNT_AFTER_FREEZE)
FREEZE_STORE_AGENT = _freeze_agent("FREEZE_STORE_AGENT", ACCOUNT_FROM_STORE)
# the reference table without its opt-out: a readback like any other
FREEZE_TABLE_READS_WORLD_AGENT = _freeze_agent(
    "FREEZE_TABLE_READS_WORLD_AGENT",
    ACCOUNT_FROM_STORE,
    replace(LIMITS, effect_independent=False),
)


# -- 3. a substitute that disagrees with reality -------------------------------------------


# r2 is a redeployment of r1: live, both answer 0.10. The frozen table the substitute
# serves is stale: it answers -0.10 for both.
def stale_table(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
    return {"bias": -0.10}


SCORER = BoundarySpec(
    kind=StepKind.MODEL,
    name="scorer",
    request={"prompt": policy("confidential")},
    response={"bias": policy("internal")},
    substitute=stale_table,
    identities=("r1", "r2"),
)
_scorer = _live("scorer", lambda w, req: Answer({"bias": 0.10}, resolved=w.revision))


def _scored(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    bias = float(ctx.call(SCORER, {"prompt": "final"}, live=_scorer)["bias"])
    return _outcome(0.5 + bias + ctx.random().uniform(-0.01, 0.01))


STALE_SUBSTITUTE_AGENT = _agent(
    "STALE_SUBSTITUTE_AGENT",
    _scored,
    (SCORER,),
    revisions={"model": RevisionPoint("scorer", ("r1", "r2"))},
)


# -- 5. randomness: one stream per run, named sub-streams ----------------------------------


def _draws(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    first = ctx.random().random()
    second = ctx.random().random()  # continues the run's stream
    noise = ctx.random("noise").random()
    again = ctx.random("noise").random()  # continues the named stream
    same = ctx.random() is ctx.random() and ctx.random("noise") is ctx.random("noise")
    return _outcome(
        0.5 + (first - second) / 10,
        draws=[first, second],
        noise=[noise, again],
        same_object=same,
    )


DRAWS_AGENT = _agent("DRAWS_AGENT", _draws, ())


# -- 6. recorded configuration and files ----------------------------------------------------

ENV_NAME = "VALIDITY_ENGINE_REGION"


def _configured(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    region = ctx.env(ENV_NAME)
    content = ctx.read(str(inputs["path"]))
    high = region == "eu-west" and content.startswith(b"limit=high")
    return _outcome(0.9 if high else 0.1, region=region, size=len(content))


def _env_by_value(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # which variable is read depends on the looked-up value
    value = float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])
    region = ctx.env(ENV_NAME if value >= 0.5 else ENV_NAME + "_FALLBACK")
    return _outcome(0.9 if region == "eu-west" else 0.1, region=region)


def _path_by_value(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # which file is read depends on the looked-up value
    value = float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])
    content = ctx.read(str(inputs["path"]) + ("" if value >= 0.5 else ".fallback"))
    return _outcome(0.9 if content.startswith(b"limit=high") else 0.1, size=len(content))


CONFIG_AGENT = _agent("CONFIG_AGENT", _configured, ())
PATH_BY_VALUE_AGENT = _agent("PATH_BY_VALUE_AGENT", _path_by_value, (LOOKUP,))
ENV_BY_VALUE_AGENT = _agent("ENV_BY_VALUE_AGENT", _env_by_value, (LOOKUP,))
