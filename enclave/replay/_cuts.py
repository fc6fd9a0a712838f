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
``AuditRequest`` already. The same checks run on the sealed metadata alone
(``check_cut_in_record``: the governed service, at admission) and on the decrypted,
intervened trajectory (``check_from_cut``: every audit, before a worker starts).
"""

from __future__ import annotations

from collections.abc import Iterable

from ledger import StepKind, StepRecord

from .._errors import BadInput
from ._model import RecordedStep, Trajectory

__all__ = ["check_cut_in_record", "check_from_cut", "cut_step", "cut_summary"]

NO_SUCH_CUT = "the specimen recorded no cut of that name"
TARGET_BEFORE = (
    "the intervention's target lies before the cut: replay from an earlier cut or in full"
)
RANDOM_BEFORE = "the run drew randomness before the cut: replay it in full"


def check_cut_in_record(steps: Iterable[StepRecord], name: str, targets: Iterable[str]) -> None:
    """Checks 1-3 on the ledger's step records (metadata): ``targets`` are the call ids
    the intervention changes."""
    ordered = sorted(steps, key=lambda s: s.seq)
    cut = next((s for s in ordered if s.kind is StepKind.CUT and s.name == name), None)
    if cut is None:
        raise BadInput(NO_SUCH_CUT)
    wanted = set(targets)
    for step in ordered:
        if step.seq > cut.seq:
            break
        if step.call_id in wanted:
            raise BadInput(TARGET_BEFORE)
        if step.kind is StepKind.RANDOM:
            raise BadInput(RANDOM_BEFORE)


def cut_step(trajectory: Trajectory, name: str) -> RecordedStep:
    """The recorded step of the cut ``name``, or ``BadInput``."""
    for step in trajectory.steps:
        if step.kind == StepKind.CUT.value and step.name == name:
            return step
    raise BadInput(NO_SUCH_CUT)


def check_from_cut(intervened: Trajectory, name: str) -> RecordedStep:
    """Refuse (``BadInput``) an audit from cut ``name`` of the intervened trajectory
    (the record with the intervention applied); return the cut's step."""
    cut = cut_step(intervened, name)
    for step in intervened.steps:
        if step.seq > cut.seq:
            break
        if step.intervened or step.serve_by_substitute:
            raise BadInput(TARGET_BEFORE)
        if step.kind == StepKind.RANDOM.value:
            raise BadInput(RANDOM_BEFORE)
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
