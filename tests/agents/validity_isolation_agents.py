"""Agents whose true causal answer is known by construction, each leaning on one kind of
hidden state a replay apparatus could carry from one run into the next.

The truth is the agent run live, on its own, with the intervention applied: every
agent here reads the ``lookup`` tool's ``value`` (0.8 when captured) and decides HIGH
at or above 0.5. The tests replace that value and compare the audit with the figure
derived here, not with what a shared process happens to produce.

Register them by reference, e.g. ``tests.agents.validity_isolation_agents:MEMO_AGENT``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from enclave.capture import AgentSpec, Context
from tests.agents.replay_agents import INPUTS, LOOKUP, OUTCOME, _lookup, replaying

THRESHOLD = 0.5
RECORDED_VALUE = 0.8
SCRATCH_NOTE = "validity-note.txt"
PROBE_VARIABLE = "VALIDITY_PROBE"
# Ten strings whose set iteration order depends on the interpreter's hash seed.
NAMES = tuple(f"name-{i}" for i in range(10))

# module-level state: a fresh interpreter starts with these empty
_memo: dict[str, float] = {}
_runs = [0]


def _outcome(score: float) -> dict[str, Any]:
    decision = "HIGH" if score >= THRESHOLD else "LOW"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision},
        "evidence": ["lookup"],
    }


def _value(ctx: Context, inputs: Mapping[str, Any]) -> float:
    return float(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)["value"])


def set_order_index() -> int:
    """Where iteration over a set of :data:`NAMES` starts: a function of the hash seed."""
    return NAMES.index(next(iter(set(NAMES))))


def _memo_run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # memoised by key, not by value: a second run in the same process reuses the first
    # run's answer, whatever its own record says
    value = _memo.setdefault(str(inputs["key"]), _value(ctx, inputs))
    return _outcome(value)


def _counter_run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    _runs[0] += 1
    return _outcome(value if _runs[0] == 1 else value - 0.5)  # "warm" runs decide otherwise


def _scratch_run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    if not replaying(ctx):
        return _outcome(value)
    if os.path.exists(SCRATCH_NOTE):  # left by an earlier run
        return _outcome(value - 0.5)
    with open(SCRATCH_NOTE, "w", encoding="utf-8") as fh:
        fh.write("seen")
    return _outcome(value)


def _intervened_only(
    hidden: Callable[[], float],
) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    """Only the intervened branch (value != recorded) consults ``hidden``."""

    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        value = _value(ctx, inputs)
        if value != RECORDED_VALUE:
            value += hidden()
        return _outcome(value)

    return run


def _set_order_offset() -> float:
    return 0.05 * set_order_index()


def _environment_offset() -> float:
    return -0.5 if os.environ.get(PROBE_VARIABLE) else 0.0


def _address_offset() -> float:
    # the address of an object made before any run: the same in every run of one
    # process, different in another process (address-space layout randomisation). The
    # bits below 2 MiB barely vary (large mappings are aligned), so the offset takes the
    # bits above them: 4,999 values one score resolution apart, and two workers agree
    # about once in 5,000 audits
    return ((id(sys) >> 21) % 4999) * 0.0001


def _fork_run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    value = _value(ctx, inputs)
    if replaying(ctx) and value != RECORDED_VALUE:
        _plain_fork_without_audit_event()
    return _outcome(value)


def _plain_fork_without_audit_event() -> None:
    """A plain fork(2) (with a preexec_fn the C helper cannot vfork) that raises no
    audit event: only the seccomp filter stands in its way."""
    import _posixsubprocess

    fork_exec: Any = _posixsubprocess.fork_exec  # 3.11 positional signature
    errpipe_read, errpipe_write = os.pipe()
    true = b"/bin/true"
    fork_exec(
        [true], [true], True, (errpipe_write,), None, None,
        -1, -1, -1, -1, -1, -1, errpipe_read, errpipe_write,
        False, False, -1, None, None, None, -1, lambda: None, False,
    )  # fmt: skip


def _spec(name: str, function: Callable[[Context, Mapping[str, Any]], dict[str, Any]]) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.validity_isolation_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=(LOOKUP,),
    )


MEMO_AGENT = _spec("MEMO_AGENT", _memo_run)
COUNTER_AGENT = _spec("COUNTER_AGENT", _counter_run)
SCRATCH_AGENT = _spec("SCRATCH_AGENT", _scratch_run)
SET_ORDER_AGENT = _spec("SET_ORDER_AGENT", _intervened_only(_set_order_offset))
ENVIRONMENT_AGENT = _spec("ENVIRONMENT_AGENT", _intervened_only(_environment_offset))
ADDRESS_AGENT = _spec("ADDRESS_AGENT", _intervened_only(_address_offset))
FORK_AGENT = _spec("FORK_AGENT", _fork_run)


# -- sandbox handlers (run as agent code, one fresh process per call) ------------------


def read_environment(request: dict[str, Any]) -> dict[str, Any]:
    return {"env": dict(os.environ), "hash_seed": sys.flags.hash_randomization}


def scratch_note(request: dict[str, Any]) -> dict[str, Any]:
    """Report what an earlier call left in scratch, then leave something behind."""
    found = sorted(os.listdir("."))
    with open(SCRATCH_NOTE, "w", encoding="utf-8") as fh:
        fh.write("seen")
    os.mkdir("left-dir")
    os.chmod("left-dir", 0)  # a directory the next call could not even list
    return {"found": found}


def count_calls(request: dict[str, Any]) -> dict[str, Any]:
    _runs[0] += 1
    return {"runs": _runs[0]}
