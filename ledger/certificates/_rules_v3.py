"""Rules of a v3 predicate beyond its schema: v2's, where v3 reports less.

The rules of ``_rules_v2`` in the same order, with these differences:

3. The effect: the TOST interval and the minimum detectable delta are the ones the mean
   and the two-sided interval imply (``statistics.derived_equivalence``,
   ``derived_delta_mde``), not figures of their own; no histogram; per-layer changes
   are coarse, so nothing to add up.
4. No per-sample rows. The recorded seed is sampled exactly when within the seeds and
   its flip agrees with its decision labels.
6. Served-by: at most one row per arm for its recorded calls and one for its new calls;
   a row is one mark for ``all`` cells and ``none`` of the others, or at least two
   marks for ``some`` each; no ``intervention`` in the baseline arm; new calls only
   substitute, unservable, inference or absent; the inference column on every row or
   none, and used only under a grant. ``substituted`` is present exactly with the
   table, non-empty exactly when some recorded-calls row has a substitute mark, and
   holds no boundary whose substitute did not reproduce the record.
7. A cut: as v2, and its boundary is not among ``substituted``.
8. Substitute answers: a count of samples no larger than N, and only where some row
   carries a substitute or unservable mark.
"""

from __future__ import annotations

from typing import Any

from ._rules_v2 import (
    _classification,
    _close,
    _cut_named,
    _figures,
    _flip_consistent,
    _label,
    _substitute_answers,
)
from ._schema import _on_grid, _rule_problems, _schema_problems
from ._schema_v2 import INFERENCE_COLUMN, SERVED_COLUMNS
from ._schema_v3 import PREDICATE_SCHEMA
from ._tight import implied_figures

__all__ = ["predicate_problems_v3"]

_NONE, _ALL = "none", "all"


def _used(cell: Any) -> bool:
    return bool(cell != _NONE)


def _whole(row: dict[str, Any]) -> bool:
    cells = [row[c] for c in SERVED_COLUMNS] + [row.get(INFERENCE_COLUMN, _NONE)]
    marks = [cell for cell in cells if cell != _NONE]
    return marks == [_ALL] or (len(marks) >= 2 and _ALL not in marks)


def _served_by(p: dict[str, Any]) -> list[str]:
    rows, substituted = p["served_by"], p["substituted"]
    if (rows is None) != (substituted is None):
        return ["/substituted: present exactly with the served-by table"]
    if rows is None:
        return []
    problems = []
    if len({(r["arm"], r["calls"]) for r in rows}) != len(rows):
        problems.append("/served_by: an (arm, calls) row appears twice")
    if not all(_whole(r) for r in rows):
        problems.append("/served_by: a row's marks do not cover the samples")
    if len({INFERENCE_COLUMN in r for r in rows}) > 1:
        problems.append("/served_by: the inference column is on some rows only")
    if any(_used(r.get(INFERENCE_COLUMN, _NONE)) for r in rows) and p.get("inference") is None:
        problems.append("/served_by: calls answered by inference no grant authorised")
    if any(r["arm"] == "baseline" and _used(r["intervention"]) for r in rows):
        problems.append("/served_by: the baseline arm has no intervened call")
    new = [r for r in rows if r["calls"] == "new"]
    if any(_used(r[c]) for r in new for c in ("record", "intervention", "unused")):
        problems.append("/served_by: a call the record does not know was served from it")
    recorded = [r for r in rows if r["calls"] == "recorded"]
    if bool(substituted) != any(_used(r["substitute"]) for r in recorded):
        problems.append("/substituted: contradicts the recorded calls' substitute marks")
    fidelity = p.get("substitute_fidelity") or {}
    if any(not fidelity.get(name, {"faithful": True})["faithful"] for name in substituted):
        problems.append("/served_by: an unfaithful substitute served a call")
    return problems


def _cut(p: dict[str, Any]) -> list[str]:
    problems = _cut_named(p)
    cut = p.get("cut")
    if not problems and cut is not None and cut["name"] in (p["substituted"] or ()):
        problems.append("/served_by: the cut was not served from the record")
    return problems


def _substituted(p: dict[str, Any], names: set[str], n: int) -> int:
    """N if some row has a substitute or unservable mark (no row names a boundary)."""
    rows = p["served_by"]
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
    equivalence, mde = implied_figures(effect, n, resolution)
    if not all(map(_close, eq["delta_interval"], equivalence)):
        problems.append("/effect/equivalence/delta_interval: is not the one the interval implies")
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
    if "flip" in recorded and not _flip_consistent(
        recorded["baseline"], recorded["intervened"], recorded["flip"]
    ):
        problems.append("/recorded_seed: a flip contradicts its decision labels")
    return problems


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
    if p["served_by"] is not None and samples is None:
        problems.append("/served_by: reported without samples")
    problems += _served_by(p)  # 6.
    problems += _cut(p)  # 7.
    problems += _substitute_answers(
        p, None if samples is None else samples["count"], _substituted
    )  # 8.
    return problems
