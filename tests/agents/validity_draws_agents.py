"""Agents that read the wall clock, the global ``random`` module and generated ids
directly, as real agent code does, with causal answers known by construction.

The truth of a counterfactual is the agent run LIVE through capture with the
intervention applied to the live response (``live(overrides={"lookup": {...}})``) on the
same seed (and, for the clock, the same wall clock); a replay of the baseline specimen
with the intervention and that seed must give the same answer, or abstain
(``unservable``).

Live functions are guarded: they raise unless ``with live(...):`` is active, so a replay
that ever went live would end its run with ``agent_error``.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

THRESHOLD = 0.5
RECORDED_VALUE = 0.8  # the live lookup's answer: HIGH

_overrides: dict[str, dict[str, Any]] | None = None


@contextmanager
def live(*, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Iterator[None]:
    """The live world for one capture; ``overrides`` is the intervention."""
    global _overrides
    previous = _overrides
    _overrides = {k: dict(v) for k, v in (overrides or {}).items()}
    try:
        yield
    finally:
        _overrides = previous


def _lookup(request: Mapping[str, Any]) -> Answer:
    if _overrides is None:
        raise RuntimeError("live lookup called outside capture")
    # a live client draws its own retry jitter and request id: the world's, not the run's
    random.random()
    uuid.uuid4()
    time.time()
    got = Answer({"value": RECORDED_VALUE}, resolved="lookup@1")
    changed = _overrides.get("lookup")
    return replace(got, response={**got.response, **changed}) if changed else got


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
INPUTS = {"key": policy("internal")}
OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
    "evidence": policy("internal"),
}


def _outcome(score: float, **proposal: Any) -> dict[str, Any]:
    score = min(1.0, max(0.0, score))
    decision = "HIGH" if score >= THRESHOLD else "LOW"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision, **proposal},
        "evidence": [],
    }


def _agent(
    name: str, function: Callable[[Context, Mapping[str, Any]], dict[str, Any]]
) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.validity_draws_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=(LOOKUP,),
    )


def _value(ctx: Context, inputs: Mapping[str, Any]) -> float:
    return float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])


# -- (a) the global random module, only on the counterfactual path -----------------------


def _random_when_low(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    if value >= THRESHOLD:
        return _outcome(value)
    # a low value is re-scored with a random boost: the decision follows the draw
    boost = random.random() * 0.6  # noqa: S311 - the agent's own jitter
    return _outcome(value + boost, boost=boost)


RANDOM_WHEN_LOW_AGENT = _agent("RANDOM_WHEN_LOW_AGENT", _random_when_low)


# -- (b) the global random module on every path ----------------------------------------


def _random_always(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    order = ["a", "b", "c", "d", "e"]
    random.shuffle(order)
    draws = {
        "uniform": random.uniform(-0.01, 0.01),  # noqa: S311
        "randint": random.randint(1, 1000),  # noqa: S311
        "choice": random.choice("xyz"),  # noqa: S311
        "choices": random.choices(range(10), k=3),  # noqa: S311
        "sample": random.sample(range(100), 4),
        "gauss": random.gauss(0.0, 1.0),
        "bits": random.getrandbits(40),
        "bytes": random.randbytes(4).hex(),
        "order": order,
    }
    return _outcome(value + draws["uniform"], draws=draws)


RANDOM_ALWAYS_AGENT = _agent("RANDOM_ALWAYS_AGENT", _random_always)


def _reseeds(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    random.seed(1234)  # the run seeds its own stream, nobody else's
    fixed = [random.random() for _ in range(3)]  # noqa: S311
    state = random.getstate()
    again = random.random()  # noqa: S311
    random.setstate(state)
    return _outcome(value, fixed=fixed, repeat=[again, random.random()])  # noqa: S311


RESEEDS_AGENT = _agent("RESEEDS_AGENT", _reseeds)


def _reserved_stream(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    try:
        ctx.random("ambient:random")
    except ValueError as exc:
        return _outcome(value, refused=str(exc))
    return _outcome(value, refused=None)


RESERVED_STREAM_AGENT = _agent("RESERVED_STREAM_AGENT", _reserved_stream)


# -- (c) the wall clock -----------------------------------------------------------------


def _clock_reading() -> dict[str, Any]:
    return {
        "time": time.time(),
        "time_ns": str(time.time_ns()),  # beyond JSON's safe integers
        "gmtime": list(time.gmtime())[:6],
        "localtime": list(time.localtime())[:6],
        "ctime": time.ctime(),
        "asctime": time.asctime(),
        "strftime": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _clock_when_low(recorded: bool) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        if recorded:
            ctx.now()  # every path: the record holds the run's time
        value = _value(ctx, inputs)
        if value >= THRESHOLD:
            return _outcome(value)
        reading = _clock_reading()
        # the decision follows the wall clock: the second within its minute
        return _outcome(value + int(reading["time"]) % 60 / 100, clock=reading)

    return run


CLOCK_WHEN_LOW_AGENT = _agent("CLOCK_WHEN_LOW_AGENT", _clock_when_low(recorded=True))
UNRECORDED_CLOCK_AGENT = _agent("UNRECORDED_CLOCK_AGENT", _clock_when_low(recorded=False))


def _swallows_clock(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    if value >= THRESHOLD:
        return _outcome(value)
    try:
        stamp = time.time()
    except Exception:  # noqa: BLE001 - agent code that swallows every error
        stamp = 0.0
    return _outcome(value + int(stamp) % 60 / 100)


SWALLOWS_CLOCK_AGENT = _agent("SWALLOWS_CLOCK_AGENT", _swallows_clock)


# -- (d) generated ids on the decision path ---------------------------------------------


def _ids(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    ticket = uuid.uuid4()
    node = uuid.uuid1()
    # the id decides a tie-break: a bucket of its bits
    return _outcome(value + ticket.int % 1000 / 100_000, ticket=str(ticket), node=str(node))


IDS_AGENT = _agent("IDS_AGENT", _ids)


# -- 5. one thread's capture is not another thread's randomness ------------------------

inside = threading.Event()  # the agent is inside its observed run
release = threading.Event()  # the test lets it finish


def _waits(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    first = random.random()  # noqa: S311
    inside.set()
    if not release.wait(30):
        raise RuntimeError("never released")
    return _outcome(value, draws=[first, random.random()])  # noqa: S311


WAITS_AGENT = _agent("WAITS_AGENT", _waits)
