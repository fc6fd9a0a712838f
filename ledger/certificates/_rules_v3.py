"""Rules of a v3 predicate beyond its schema: v2's, where v3 reports less.

The rules of ``_rules_v2`` in the same order, with these differences:

3. The effect: the TOST interval and the minimum detectable delta are the ones the mean
   and the two-sided interval imply (``statistics.derived_equivalence``,
   ``derived_delta_mde``), not figures of their own; no histogram; per-layer changes
   are coarse, so nothing to add up.
4. No per-sample rows. The recorded seed is sampled exactly when within the seeds, its
   flip agrees with its decision labels and its delta with the outcome kind.
6. Served-by cells are coarse: a row is one mark for ``all`` samples and ``none`` of
   the others, or at least two marks for ``some`` each; every v2 rule on which marks a
   call may carry holds for the marks that are not ``none``.
8. Substitute answers: a count of samples no larger than N, and only where some row of
   a named boundary (or of new calls) carries a substitute or unservable mark.
"""

from __future__ import annotations

from typing import Any

from ._rules_v2 import (
    _classification,
    _close,
    _cut,
    _figures,
    _label,
    _recorded_run,
    _served_by,
    _substitute_answers,
)
from ._schema import _on_grid, _rule_problems, _schema_problems
from ._schema_v2 import INFERENCE_COLUMN, SERVED_COLUMNS
from ._schema_v3 import PREDICATE_SCHEMA
from .statistics import derived_delta_mde, derived_equivalence

__all__ = ["predicate_problems_v3"]

_NONE, _ALL = "none", "all"


def _used(cell: Any) -> bool:
    return cell != _NONE


def _whole(row: dict[str, Any]) -> bool:
    cells = [row[c] for c in SERVED_COLUMNS] + [row.get(INFERENCE_COLUMN, _NONE)]
    marks = [cell for cell in cells if cell != _NONE]
    return marks == [_ALL] or (len(marks) >= 2 and _ALL not in marks)


def _substituted(rows: list[dict[str, Any]], n: int) -> int:
    return n if any(_used(r["substitute"]) or _used(r["unservable"]) for r in rows) else 0


def _numeric(effect: dict[str, Any], resolution: float, n: int) -> list[str]:
    numeric = effect["outcome"] == "numeric"
    eq = effect["equivalence"]
    fields = (effect["mean_delta"], effect["delta_interval"], eq["delta_interval"])
    if any((value is None) == numeric for value in (*fields, effect["mde"]["delta"])):
        return ["/effect/outcome: numeric fields must be present exactly for a numeric outcome"]
    if not numeric:
        return []
    mean, interval = effect["mean_delta"], effect["delta_interval"]
    if not all(_on_grid(v, resolution) for v in (mean, *interval)):
        return ["/effect: a delta is not on the declared resolution"]
    if not interval[0] <= mean <= interval[1]:
        return ["/effect/delta_interval: does not hold the mean delta"]
    if n < 2:
        return ["/effect: a numeric outcome needs at least two samples"]
    problems = []
    implied = derived_equivalence(
        mean,
        interval,
        n=n,
        resolution=resolution,
        confidence=effect["confidence"],
        alpha=eq["alpha"],
    )
    if not all(map(_close, eq["delta_interval"], implied)):
        problems.append("/effect/equivalence/delta_interval: is not the one the interval implies")
    mde = derived_delta_mde(
        interval,
        n=n,
        resolution=resolution,
        tolerance=effect["score_tolerance"],
        confidence=effect["confidence"],
        power=effect["mde"]["power"],
    )
    if not _close(effect["mde"]["delta"], mde):
        problems.append("/effect/mde/delta: is not the one the interval implies")
    return problems


def _effect(p: dict[str, Any], n: int) -> list[str]:
    effect = p["effect"]
    problems = _numeric(effect, p["disclosure"]["resolution"], n) + _figures(p, n, [])
    return problems or _label(p)


def _recorded_seed(p: dict[str, Any], seed: int, n: int) -> list[str]:
    recorded = p["recorded_seed"]
    if recorded is None:
        return []
    problems = []
    if recorded["sampled"] != (seed <= recorded["seed"] < seed + n):
        problems.append("/recorded_seed/sampled: contradicts the sampled seeds")
    return problems + _recorded_run(recorded, p["effect"])


def predicate_problems_v3(predicate: Any) -> list[str]:
    """Every schema violation and broken rule of a v3 predicate (``location: rule``)."""
    problems = _schema_problems(predicate, PREDICATE_SCHEMA)
    if problems:
        return problems
    p = predicate
    problems = _rule_problems(p, v1=False)  # 1.
    problems += _classification(p)  # 2.
    samples = p["samples"]
    if p["effect"] is not None and samples is not None:
        n, seed = samples["count"], samples["seed"]
        problems += _effect(p, n)  # 3.
        problems += _recorded_seed(p, seed, n)  # 4., 5.
    if p["served_by"] is not None:
        if samples is None:
            problems.append("/served_by: reported without samples")
        else:
            problems += _served_by(p, _whole, _used)  # 6.
    problems += _cut(p, _used)  # 7.
    problems += _substitute_answers(
        p, None if samples is None else samples["count"], _substituted
    )  # 8.
    return problems
