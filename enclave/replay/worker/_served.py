"""How each call of each arm was served, reduced to marks and counted over samples.

A run's serving trace (``RunResult.served``: (call id, how) in call order) and the
recorded calls it never consumed (``RunResult.unused``) become one mark per call id and
arm: the first way the call was served, else ``unused``. Over N samples each (arm, call)
row counts its marks and ``absent`` (the samples where the call did not occur), so every
row sums to N.

What a mark may say is closed: ``intervention`` only in the intervened and placebo arms
(the baseline has no intervened call); a call the record does not know (``new_call #k``)
only ``substitute``, ``inference`` (answered under the audit's inference policy, by the
supervisor) or ``unservable``; ``unused`` only for recorded calls. An ambient
input the record does not hold is reported by the closed name of its kind
(``AMBIENT_MISSING``: ``ambient:env``...), only ever ``unservable``; it ends the run
``ambient_input``, so its row never reaches a certificate (a failed audit issues none).

Calls the record does not know are numbered per run in order of appearance, so
``new_call #0`` of one sample need not be the same call as in another: the table counts
them together, per arm, as one ``NEW_CALLS`` row — per sample ``unservable`` if any of
them was, else ``substitute`` if there was one, else ``inference`` if there was one,
else ``absent``.

Which boundaries' substitutes answered a *request* the record does not hold is kept
apart, per sample, as (arm, boundary) pairs (``extrapolated``): a substitute is checked
on the recorded requests only (``_fidelity``), so its answer to any other request is its
own extrapolation. The marks above cannot tell these apart: the k-th call of a boundary
keeps its recorded call id whatever it asks, so a changed request shows as
``substitute`` on a recorded call, like a recorded request answered in a changed world.
A boundary the record never called is named ``UNRECORDED``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from .._model import RunResult

__all__ = [
    "ABSENT",
    "AMBIENT_MISSING",
    "ARMS",
    "COLUMNS",
    "HOWS",
    "NEW_CALLS",
    "UNRECORDED",
    "UNUSED",
    "extrapolated",
    "mark_allowed",
    "marks_of",
    "served_by_table",
]

ARMS = ("baseline", "intervened", "placebo")
_ORDER = secrets.SystemRandom()  # no state: each draw is the kernel's


def arm_order() -> list[str]:
    """The arms of one sample in the order they run, drawn afresh from the system's
    randomness: a run's place among its worker's runs (its pid shows it) then says
    nothing of its arm, so no run can tell the placebo from the baseline."""
    order = list(ARMS)
    _ORDER.shuffle(order)
    return order


HOWS = ("record", "substitute", "intervention", "unservable", "inference")
UNUSED = "unused"
INFERENCE = "inference"  # a column only in a table of an audit that asked (else dropped)
ABSENT = "absent"
COLUMNS = (*HOWS, UNUSED, ABSENT)
_NEW_CALL_HOWS = frozenset({"substitute", "unservable", "inference"})
# which mark a sample's new calls of one arm take together: the first of these it met
_NEW_CALL_ORDER = ("unservable", "substitute", "inference")
NEW_CALL_PREFIX = "new_call #"
NEW_CALLS = "new calls"
# how a boundary outside the record's own names is reported: its name is not disclosed
UNRECORDED = "(unrecorded boundary)"
# the names a missing ambient read is marked by (``enclave.capture._ambient``): closed
AMBIENT_MISSING = frozenset(
    {"ambient:env", "ambient:environ", "ambient:credential", "ambient:file"}
)


def mark_allowed(arm: str, how: str, *, recorded: bool, ambient: bool = False) -> bool:
    """Whether a mark is possible at all: anything else is a forged reply. ``ambient``:
    the call is a closed name of ``AMBIENT_MISSING`` (only ever unservable)."""
    if arm not in ARMS or how not in (*HOWS, UNUSED):
        return False
    if ambient:
        return how == "unservable"
    if not recorded:
        return how in _NEW_CALL_HOWS
    return not (arm == "baseline" and how == "intervention")


def marks_of(run: RunResult) -> list[tuple[str, str, str]]:
    """(arm, call id, how) for one run: first serving wins, then unused recorded calls.
    Names are raw here (inside the worker); the supervisor renames unknown ones."""
    marks: dict[str, str] = {}
    for call_id, how in run.served:
        marks.setdefault(call_id, how)
    for call_id in run.unused:
        marks.setdefault(call_id, UNUSED)
    return [(run.variant, call_id, how) for call_id, how in marks.items()]


def extrapolated(runs: Iterable[RunResult], names: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """(arm, boundary) for every boundary whose substitute answered, in that arm, a
    request the record does not hold; boundaries not among the record's ``names``
    (``_model.boundary_names``) as ``UNRECORDED``."""
    found = {
        (run.variant, name if name in names else UNRECORDED)
        for run in runs
        for name in run.extrapolated
    }
    return tuple(sorted(found, key=lambda pair: (ARMS.index(pair[0]), pair[1])))


def served_by_table(
    marks: Iterable[Sequence[tuple[str, str, str]]], samples: int
) -> list[dict[str, Any]]:
    """Rows ``{arm, call, record, substitute, intervention, unservable, inference, unused,
    absent}`` (``inference`` only if some call was answered so)
    ordered by arm then call; each row's counts sum to ``samples``."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for sample in marks:
        new: dict[str, str] = {}  # arm -> the sample's mark for its unknown calls
        for arm, call, how in sample:
            if call.startswith(NEW_CALL_PREFIX):
                earlier = new.get(arm)
                if earlier is None or _NEW_CALL_ORDER.index(how) < _NEW_CALL_ORDER.index(earlier):
                    new[arm] = how
                continue
            row = counts.setdefault((arm, call), dict.fromkeys(COLUMNS, 0))
            row[how] += 1
        for arm, how in new.items():
            counts.setdefault((arm, NEW_CALLS), dict.fromkeys(COLUMNS, 0))[how] += 1
    asked = any(row[INFERENCE] for row in counts.values())
    rows: list[dict[str, Any]] = []
    for (arm, call), row in sorted(counts.items(), key=lambda kv: (ARMS.index(kv[0][0]), kv[0][1])):
        row[ABSENT] = samples - sum(row[c] for c in COLUMNS if c != ABSENT)
        if not asked:  # an audit without inference: no such column
            del row[INFERENCE]
        rows.append({"arm": arm, "call": call, **row})
    return rows
