"""Agents that read the world outside ``ctx``: environment variables and data files.

Each agent asks one live boundary (``lookup``) for a value; the intervention replaces
it. Some read a variable or a file with plain ``os.environ`` / ``os.getenv`` / ``open``
— on every path, or only on the fallback path the intervention opens. The truth of a
counterfactual is the agent run LIVE through capture with the intervention applied to
the live response, in the same world (same variable, same file) as the baseline
capture. A replay must agree with it, or abstain (``ambient_input``): the variable the
sandbox does not hold is not "absent" in the world the counterfactual would have met.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

VARIABLE = "RE_VALIDITY_AMBIENT_MODE"
OWN_VARIABLE = "RE_VALIDITY_AMBIENT_OWN"
# read only on the fallback path, after VARIABLE was read on every path (as a library
# reads an optional setting lazily, on first use)
LAZY_VARIABLE = "RE_VALIDITY_AMBIENT_LAZY"
API_KEY = "RE_VALIDITY_SERVICE_API_KEY"
DECLARED_CREDENTIAL = "RE_VALIDITY_SIGNING_MATERIAL"
CANARY = "CANARY-AMBIENT-5e1f09"
THRESHOLD = 0.5

# what the credential agent saw, per run (the test reads it; the record must not hold it)
SEEN: list[str | None] = []

_value: list[float] = []  # the live lookup's answer while ``live`` is active


@contextmanager
def live(value: float) -> Iterator[None]:
    _value.append(value)
    try:
        yield
    finally:
        _value.pop()


def _lookup(request: Mapping[str, Any]) -> Answer:
    if not _value:
        raise RuntimeError("live lookup called outside capture")
    return Answer(response={"value": _value[-1]})


LOOKUP = BoundarySpec(
    kind=StepKind.TOOL,
    name="lookup",
    request={"key": policy("internal")},
    response={"value": policy("internal")},
    json_schema={"type": "object", "properties": {"value": {"type": "number"}}},
)
INPUTS = {"key": policy("internal"), "path": policy("internal")}
OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
    "evidence": policy("internal"),
}


def _outcome(score: float) -> dict[str, Any]:
    score = min(1.0, max(0.0, score))
    decision = "HIGH" if score >= THRESHOLD else "LOW"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision},
        "evidence": [],
    }


def _value_of(ctx: Context, inputs: Mapping[str, Any]) -> float:
    return float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])


def _fallback(mode: str | None, value: float) -> float:
    # production says "lenient": the fallback keeps the case HIGH; without it, LOW
    return 0.8 if mode == "lenient" else value


def _env_on_fallback(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value_of(ctx, inputs)
    if value >= THRESHOLD:
        return _outcome(value)
    return _outcome(_fallback(os.environ.get(VARIABLE), value))  # read only here


def _env_always(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    mode = os.getenv(VARIABLE)  # read on every path
    value = _value_of(ctx, inputs)
    return _outcome(value if value >= THRESHOLD else _fallback(mode, value))


def _env_lazy_on_fallback(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    mode = os.getenv(VARIABLE)  # read on every path: the run's first read
    value = _value_of(ctx, inputs)
    if value >= THRESHOLD:
        return _outcome(value)
    return _outcome(_fallback(os.environ.get(LAZY_VARIABLE, mode), value))


def _file_on_fallback(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value_of(ctx, inputs)
    if value >= THRESHOLD:
        return _outcome(value)
    with open(str(inputs["path"]), encoding="utf-8") as fh:
        mode = fh.read().strip()
    return _outcome(_fallback(mode, value))


def _file_always(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    mode = Path(str(inputs["path"])).read_text(encoding="utf-8").strip()
    raw = Path(str(inputs["path"])).read_bytes()  # the same file again: the same bytes
    if raw.decode("utf-8").strip() != mode:
        raise RuntimeError("the file changed under the run")
    value = _value_of(ctx, inputs)
    return _outcome(value if value >= THRESHOLD else _fallback(mode, value))


def _credential(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    SEEN.append(os.environ.get(API_KEY))
    SEEN.append(os.getenv(DECLARED_CREDENTIAL))
    value = _value_of(ctx, inputs)
    return _outcome(value)


def _own_write(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    os.environ[OWN_VARIABLE] = "lenient"  # the run's own state, not an input
    value = _value_of(ctx, inputs)
    mode = os.environ[OWN_VARIABLE]
    return _outcome(value if value >= THRESHOLD else _fallback(mode, value))


def _env_and_file(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # every path reads the variable, HOME and the file: a replay that saw the sandbox's
    # own environment (HOME=/scratch, no variable) or its own file would decide LOW
    env_mode = os.environ.get(VARIABLE)
    home = os.environ["HOME"]
    with open(str(inputs["path"]), "rb") as fh:
        file_mode = fh.read().decode("utf-8").strip()
    value = _value_of(ctx, inputs)
    if value < THRESHOLD and env_mode == file_mode == "lenient":
        value = 0.8
    return _outcome(value - (0.5 if home == "/scratch" else 0.0))


def _agent(
    name: str, function: Callable[[Context, Mapping[str, Any]], dict[str, Any]], **options: Any
) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.validity_ambient_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=(LOOKUP,),
        **options,
    )


ENV_ON_FALLBACK_AGENT = _agent("ENV_ON_FALLBACK_AGENT", _env_on_fallback)
ENV_ALWAYS_AGENT = _agent("ENV_ALWAYS_AGENT", _env_always)
ENV_LAZY_ON_FALLBACK_AGENT = _agent("ENV_LAZY_ON_FALLBACK_AGENT", _env_lazy_on_fallback)
FILE_ON_FALLBACK_AGENT = _agent("FILE_ON_FALLBACK_AGENT", _file_on_fallback)
FILE_ALWAYS_AGENT = _agent("FILE_ALWAYS_AGENT", _file_always)
CREDENTIAL_AGENT = _agent("CREDENTIAL_AGENT", _credential, credentials=(DECLARED_CREDENTIAL,))
OWN_WRITE_AGENT = _agent("OWN_WRITE_AGENT", _own_write)
ENV_AND_FILE_AGENT = _agent("ENV_AND_FILE_AGENT", _env_and_file)
