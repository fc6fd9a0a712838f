"""Does each declared substitute reproduce the record? Checked before it may serve.

On the recorded seed the baseline arm is served from the record while an intervened arm
may be served by a boundary's substitute: a substitute that disagrees with what the
boundary really answered would manufacture an effect of its own. So every substitute is
run on every recorded request of its boundary, with that step's recorded resolved
identity, and must give back the recorded response:

1. the same top-level fields, apart from those withheld or kept as a digest at capture
   (``is_hole``), which are not compared;
2. numbers within ``score_tolerance`` (a boolean is not a number), everything else equal,
   compared field by field and element by element;
3. a substitute that raises — whatever it raises — or returns no mapping is unfaithful,
   and so is one whose recorded request holds a withheld field (it cannot be checked).

This runs where agent code runs (the isolated worker): substitutes are agent code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...capture import AgentSpec, BoundarySpec
from .._model import RecordedStep, Trajectory, is_hole

__all__ = ["check_substitutes"]


def check_substitutes(
    agent: AgentSpec, trajectory: Trajectory, *, score_tolerance: float
) -> dict[str, dict[str, Any]]:
    """Per boundary that declares a substitute and has recorded calls:
    ``{"checked": n, "faithful": bool}``."""
    if isinstance(score_tolerance, bool) or not (
        isinstance(score_tolerance, int | float) and 0 <= score_tolerance <= 1
    ):
        raise ValueError("score tolerance must lie in [0, 1]")
    report: dict[str, dict[str, Any]] = {}
    for spec, steps in _substituted(agent, trajectory):
        faithful = all(_reproduces(spec, step, score_tolerance) for step in steps)
        report[spec.name] = {"checked": len(steps), "faithful": faithful}
    return report


def substitute_calls(agent: AgentSpec, trajectory: Trajectory) -> dict[str, int]:
    """How many recorded calls each boundary with a substitute has: what a fidelity
    report must cover, known without running any agent code."""
    return {spec.name: len(steps) for spec, steps in _substituted(agent, trajectory)}


def _substituted(
    agent: AgentSpec, trajectory: Trajectory
) -> list[tuple[BoundarySpec, list[RecordedStep]]]:
    found = []
    for spec in agent.boundaries:
        if spec.substitute is None:
            continue
        steps = [s for s in trajectory.steps if s.kind == spec.kind.value and s.name == spec.name]
        if steps:
            found.append((spec, steps))
    return found


def _reproduces(spec: BoundarySpec, step: RecordedStep, tolerance: float) -> bool:
    if any(is_hole(v) for v in step.request.values()):
        return False
    assert spec.substitute is not None
    try:
        answer = spec.substitute(dict(step.request), step.resolved)
        if not isinstance(answer, Mapping):
            return False
        got = {k: v for k, v in dict(answer).items() if not is_hole(step.response.get(k))}
        want = {k: v for k, v in step.response.items() if not is_hole(v)}
        return set(got) == set(want) and all(_same(got[k], want[k], tolerance) for k in want)
    except MemoryError:
        raise  # a broken memory limit contaminates the worker; it is no verdict on the code
    except BaseException:  # noqa: BLE001 - agent code may raise anything: it is unfaithful
        return False


def _same(got: Any, want: Any, tolerance: float) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, int | float) and isinstance(got, int | float):
        return math.isfinite(got) and abs(got - want) <= tolerance
    if isinstance(want, Mapping):
        return (
            isinstance(got, Mapping)
            and set(got) == set(want)
            and all(_same(got[k], want[k], tolerance) for k in want)
        )
    if isinstance(want, list | tuple):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(want)
            and all(_same(g, w, tolerance) for g, w in zip(got, want, strict=True))
        )
    return type(got) is type(want) and bool(got == want)
