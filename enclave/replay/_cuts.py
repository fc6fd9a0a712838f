"""Replay from a cut: which cut, and whether an audit may start from it.

An audit that names ``from_cut`` starts every run from that cut's recorded state
(``_engine`` invariant 8): the work before the cut is neither executed nor served. That
is sound only when nothing the audit varies lies before the cut, so before anything
runs the request is refused (``BadInput``, one line, no value) when:

1. the specimen recorded no cut of that name;
2. a step the intervention changes (its target, or any call a revision swaps) lies
   before the cut — the intervention would never be seen;
3. the run drew randomness before the cut — the sample seeds would not reach the work
   the cut stands for, so samples from the cut would not be samples of the run.

A code revision (strategy ``CODE``) changes the work before every cut and is refused at
``AuditRequest`` already.
"""

from __future__ import annotations

from ledger import StepKind

from .._errors import BadInput
from ._model import RecordedStep, Trajectory

__all__ = ["cut_step", "check_from_cut", "cut_summary"]


def cut_step(trajectory: Trajectory, name: str) -> RecordedStep:
    """The recorded step of the cut ``name``, or ``BadInput``."""
    for step in trajectory.steps:
        if step.kind == StepKind.CUT.value and step.name == name:
            return step
    raise BadInput("the specimen recorded no cut of that name")


def check_from_cut(intervened: Trajectory, name: str) -> RecordedStep:
    """Refuse (``BadInput``) an audit from cut ``name`` of the intervened trajectory
    (the record with the intervention applied); return the cut's step."""
    cut = cut_step(intervened, name)
    for step in intervened.steps:
        if step.seq > cut.seq:
            break
        if step.intervened or step.serve_by_substitute:
            raise BadInput(
                "the intervention's target lies before the cut: replay from an earlier cut "
                "or in full"
            )
        if step.kind == StepKind.RANDOM.value:
            raise BadInput("the run drew randomness before the cut: replay it in full")
    return cut


def cut_summary(trajectory: Trajectory, name: str) -> dict[str, object]:
    """How the certificate names the cut: its name, its call id, and how many recorded
    calls precede it (those the served-by table does not list were skipped)."""
    cut = cut_step(trajectory, name)
    before = sum(
        1
        for step in trajectory.steps
        if step.seq < cut.seq and step.kind not in (StepKind.INPUT.value, StepKind.OUTCOME.value)
    )
    return {"name": cut.name, "call_id": cut.call_id, "calls_before": before}
