"""Rules of a v2 predicate beyond its schema: the label follows from what is reported.

Checked in order (each as ``location: rule``, never a value):

1. The v1 rules that still hold: disclosure terms sum to ``bits``; intervention digests;
   seeds spelled ``S..S+N-1``; an effect only after a reproduced baseline, an exact
   intervention, a passed placebo, with samples and counterfactual-admissible.
2. The classification: an effect label exactly when an effect is reported;
   ``observable-only`` with that auditability class; ``not-assessed`` exactly for
   ``baseline-not-reproduced``, which has an unreproduced baseline.
3. The effect: numeric fields present exactly for a numeric outcome, on the
   resolution grid, intervals ordered and nested (TOST inside the two-sided one) and
   holding the mean; ``flips`` out of N give ``flip_rate``, ``flip_interval`` and
   ``flip_upper`` (recomputed); rates are counts out of N; ``score_tolerance`` is the
   request's; ``mde.flip_rate`` is the one N implies; the label is
   ``statistics.effect_label`` of the reported values.
4. Per-sample rows: N of them, seeds ``S..S+N-1`` in order, flips consistent with the
   labels and with ``flips``, labels consistent with the rates.
5. The recorded seed: sampled exactly when within the seeds, then equal to its row.
6. Served-by: one row per (arm, call), each summing to N; no ``intervention`` in the
   baseline arm; the ``new calls`` row (calls the record does not know) only substitute,
   unservable or absent; a boundary whose substitute did not reproduce the record
   (``substitute_fidelity``) served no call by substitute; no row of an ambient input the
   record does not hold (``ambient:env`` and the other closed names of a missing ambient
   read): such a run abstains (``ambient_input``) and a failed audit has no certificate,
   so the row could only be a forged channel.
7. A cut: ``cut`` is present exactly when the request names ``from_cut``, with that
   name; its call id is a call of that cut (``scope/<name>#0``), and the cut's own
   served-by rows show it served from the ``record`` (or unused, or absent) only.
8. Substitute answers (when reported: certificates issued before have none): with the
   served-by table; a count of samples exactly when boundaries are named, no more than
   the substitute (or unservable) marks, over the arms, on their calls and the ``new
   calls`` rows. A
   boundary not in the request's ``authoritative_substitutes`` caps the label: then
   neither ``equivalent`` nor ``influential`` follows (rule 3 derives ``inconclusive``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._schema import _on_grid, _rule_problems, _schema_problems
from ._schema_v2 import EFFECT_LABELS, INFERENCE_COLUMN, PREDICATE_SCHEMA, SERVED_COLUMNS
from ._vocabulary import AuditabilityClass, AuditLabel
from .statistics import MIN_FLIPS, clopper_pearson, effect_label, flip_mde

__all__ = ["predicate_problems_v2"]

_CLOSE = 1e-9
_RECORDED = "recorded"
_OTHER = "other"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_CLOSE, abs_tol=_CLOSE)


def _count(rate: float, n: int) -> int | None:
    k = round(rate * n)
    return k if _close(k / n, rate) else None


def _classification(p: dict[str, Any]) -> list[str]:
    label, effect, klass = p["classification"], p["effect"], p["auditability"]["class"]
    problems = []
    if (label in EFFECT_LABELS) != (effect is not None):
        problems.append("/classification: an effect label needs an effect, and only it")
    if (label == AuditLabel.OBSERVABLE_ONLY) != (klass == AuditabilityClass.OBSERVABLE_ONLY):
        problems.append("/auditability/class: contradicts the classification")
    if (label == AuditLabel.BASELINE_NOT_REPRODUCED) != (klass == AuditabilityClass.NOT_ASSESSED):
        problems.append("/auditability/class: not-assessed is for an unreproduced baseline")
    if (
        label == AuditLabel.BASELINE_NOT_REPRODUCED
        and (p["baseline"] or {}).get("reproduced") is not False
    ):
        problems.append("/classification: the baseline reproduced")
    return problems


def _numeric(effect: dict[str, Any], resolution: float) -> list[str]:
    numeric = effect["outcome"] == "numeric"
    fields = (
        effect["mean_delta"],
        effect["delta_interval"],
        effect["histogram"],
        effect["equivalence"]["delta_interval"],
        effect["mde"]["delta"],
    )
    if any((value is None) == numeric for value in fields):
        return ["/effect/outcome: numeric fields must be present exactly for a numeric outcome"]
    if not numeric:
        return []
    problems = []
    mean, (lo, hi) = effect["mean_delta"], effect["delta_interval"]
    eq_lo, eq_hi = effect["equivalence"]["delta_interval"]
    ends = (mean, lo, hi, eq_lo, eq_hi, effect["mde"]["delta"])
    if not all(_on_grid(v, resolution) for v in ends):
        problems.append("/effect: a delta is not on the declared resolution")
    if not (lo <= eq_lo <= mean <= eq_hi <= hi):
        problems.append("/effect/equivalence/delta_interval: is not nested around the mean")
    if effect["mde"]["delta"] < min(1.0, effect["score_tolerance"]) - _CLOSE:
        problems.append("/effect/mde/delta: is below the score tolerance")
    return problems


def _figures(p: dict[str, Any], n: int, layers: list[str]) -> list[str]:
    """The flip figures, rates and tolerances every effect carries (v2 and v3), with the
    ``layers`` problems in their place among them."""
    effect = p["effect"]
    k, eq = effect["flips"], effect["equivalence"]
    problems = []
    if k > n or not _close(effect["flip_rate"], k / n):
        problems.append("/effect/flip_rate: is not flips out of the sample count")
    if not all(map(_close, effect["flip_interval"], clopper_pearson(k, n, effect["confidence"]))):
        problems.append("/effect/flip_interval: is not the exact interval for the flips")
    if not _close(eq["flip_upper"], clopper_pearson(k, n, 1 - 2 * eq["alpha"])[1]):
        problems.append("/effect/equivalence/flip_upper: is not the one-sided bound")
    for name in ("baseline_rate", "intervened_rate"):
        if _count(effect[name], n) is None:
            problems.append(f"/effect/{name}: is not a count out of the sample count")
    problems += layers
    tolerances = p["request"].get("tolerances")
    declared = tolerances.get("score") if isinstance(tolerances, dict) else None
    if isinstance(declared, int | float) and not _close(declared, effect["score_tolerance"]):
        problems.append("/effect/score_tolerance: differs from the request's")
    mde = flip_mde(n, min_flips=MIN_FLIPS, power=effect["mde"]["power"])
    if (mde is None) != (effect["mde"]["flip_rate"] is None) or (
        mde is not None and not _close(mde, effect["mde"]["flip_rate"])
    ):
        problems.append("/effect/mde/flip_rate: is not the one the sample count implies")
    return problems


def _label(p: dict[str, Any]) -> list[str]:
    """The classification the reported figures give (rule 3's last step, and 8.)."""
    effect = p["effect"]
    eq = effect["equivalence"]
    derived = effect_label(
        delta_interval=effect["delta_interval"],
        equivalence_interval=eq["delta_interval"],
        score_tolerance=effect["score_tolerance"],
        flips=effect["flips"],
        flip_upper=eq["flip_upper"],
        flip_tolerance=effect["flip_tolerance"],
    )
    label = AuditLabel.INCONCLUSIVE.value if _unauthorised(p) else derived  # 8.
    if label != p["classification"]:
        return ["/classification: does not follow from the intervals and tolerances"]
    return []


def _effect(p: dict[str, Any], n: int) -> list[str]:
    effect = p["effect"]
    exceeds = any(v > n for v in effect["layer_changes"].values())
    layers = ["/effect/layer_changes: exceeds the sample count"] if exceeds else []
    problems = _numeric(effect, p["disclosure"]["resolution"]) + _figures(p, n, layers)
    return problems or _label(p)


def _flip_consistent(baseline: str, intervened: str, flip: bool) -> bool:
    if baseline != intervened:
        return flip
    return baseline == _OTHER or not flip


def _rows(p: dict[str, Any], seed: int, n: int) -> list[str]:
    rows, effect = p["sample_rows"], p["effect"]
    if rows is None:
        return ["/sample_rows: missing although an effect is reported"]
    if [r[0] for r in rows] != list(range(seed, seed + n)):
        return ["/sample_rows: seeds are not seed..seed+count-1 in order"]
    problems = []
    if not all(_flip_consistent(b, i, f) for _, b, i, f in rows):
        problems.append("/sample_rows: a flip contradicts its decision labels")
    if sum(1 for r in rows if r[3]) != effect["flips"]:
        problems.append("/sample_rows: flips differ from /effect/flips")
    for column, name in ((1, "baseline_rate"), (2, "intervened_rate")):
        if sum(1 for r in rows if r[column] == _RECORDED) != _count(effect[name], n):
            problems.append(f"/sample_rows: recorded decisions differ from /effect/{name}")
    recorded = p["recorded_seed"]
    if recorded is not None:
        inside = seed <= recorded["seed"] < seed + n
        if recorded["sampled"] != inside:
            problems.append("/recorded_seed/sampled: contradicts the sampled seeds")
        elif inside:
            _, b, i, f = rows[recorded["seed"] - seed]
            if (recorded["baseline"], recorded["intervened"], recorded["flip"]) != (b, i, f):
                problems.append("/recorded_seed: differs from its sample row")
        problems += _recorded_run(recorded, effect)
    return problems


def _recorded_run(recorded: dict[str, Any], effect: dict[str, Any]) -> list[str]:
    """The recorded seed's own run agrees with itself and with the outcome kind."""
    if "flip" not in recorded:
        return []
    problems = []
    if not _flip_consistent(recorded["baseline"], recorded["intervened"], recorded["flip"]):
        problems.append("/recorded_seed: a flip contradicts its decision labels")
    if (recorded["delta"] is None) != (effect["outcome"] == "categorical"):
        problems.append("/recorded_seed/delta: contradicts the outcome kind")
    return problems


def _served_by(p: dict[str, Any], n: int) -> list[str]:
    rows = p["served_by"] or []
    problems = []
    if len({(r["arm"], r["call"]) for r in rows}) != len(rows):
        problems.append("/served_by: an (arm, call) row appears twice")
    if any(sum(r[c] for c in SERVED_COLUMNS) + r.get(INFERENCE_COLUMN, 0) != n for r in rows):
        problems.append("/served_by: a row's counts do not sum to the sample count")
    if len({INFERENCE_COLUMN in r for r in rows}) > 1:
        problems.append("/served_by: the inference column is on some rows only")
    if any(r.get(INFERENCE_COLUMN) for r in rows) and p.get("inference") is None:
        problems.append("/served_by: calls answered by inference no grant authorised")
    if any(r["arm"] == "baseline" and r["intervention"] for r in rows):
        problems.append("/served_by: the baseline arm has no intervened call")
    new = [r for r in rows if r["call"] == "new calls"]
    if any(r["record"] or r["intervention"] or r["unused"] for r in new):
        problems.append("/served_by: a call the record does not know was served from it")
    if any(r["call"].startswith("ambient:") for r in rows):
        problems.append("/served_by: an ambient input the record does not hold abstains")
    fidelity = p.get("substitute_fidelity") or {}
    unfaithful = {name for name, checked in fidelity.items() if not checked["faithful"]}
    if any(r["substitute"] and _boundary(r["call"]) in unfaithful for r in rows):
        problems.append("/served_by: an unfaithful substitute served a call")
    return problems


def _cut_named(p: dict[str, Any]) -> list[str]:
    """The cut and the request name the same one, and its call is a call of it."""
    cut, named = p.get("cut"), p["request"].get("from_cut")
    if cut is None and named is None:
        return []
    if cut is None or named != cut["name"]:
        return ["/cut: present exactly when the request names from_cut, with its name"]
    if _boundary(cut["call_id"]) != cut["name"]:
        return ["/cut/call_id: is not a call of the named cut"]
    return []


def _cut(p: dict[str, Any]) -> list[str]:
    problems = _cut_named(p)
    cut = p.get("cut")
    if problems or cut is None:
        return problems
    rows = [r for r in p["served_by"] or [] if r["call"] == cut["call_id"]]
    if any(r[c] for r in rows for c in ("substitute", "intervention", "unservable")):
        return ["/served_by: the cut was not served from the record"]
    return []


def _unauthorised(p: dict[str, Any]) -> list[str]:
    """Boundaries whose substitute answered calls the record does not hold though the
    request does not declare it authoritative."""
    allowed = set(p["request"].get("authoritative_substitutes") or ())
    answers = p.get("substitute_answers") or {"boundaries": []}
    return [b for b in answers["boundaries"] if b not in allowed]


def _substituted(p: dict[str, Any], names: set[str], n: int) -> int:
    """At most how many samples the substitute (or unservable) marks of the named
    boundaries' calls and of new calls can account for."""
    rows = [r for r in p["served_by"] if r["call"] == "new calls" or _boundary(r["call"]) in names]
    marks: int = sum(r["substitute"] + r["unservable"] for r in rows)
    return min(n, marks)


def _substitute_answers(
    p: dict[str, Any],
    n: int | None,
    substituted: Callable[[dict[str, Any], set[str], int], int] = _substituted,
) -> list[str]:
    answers = p.get("substitute_answers")
    if answers is None:
        return []
    if p["served_by"] is None or n is None:
        return ["/substitute_answers: reported without a served-by table"]
    problems = []
    names, k = set(answers["boundaries"]), answers["samples"]
    if (k == 0) != (not names):
        problems.append("/substitute_answers: a sample count exactly when boundaries are named")
    if k > substituted(p, names, n):
        problems.append("/substitute_answers: exceeds the samples served by substitute")
    if p["classification"] in EFFECT_LABELS and p["classification"] != AuditLabel.INCONCLUSIVE:
        if _unauthorised(p):
            problems.append(
                "/classification: rests on a substitute's answers to requests the record does "
                "not hold, which the request does not declare authoritative"
            )
    return problems


def _boundary(call: str) -> str:
    """The boundary of a call id ``scope/name#k``."""
    return call.partition("/")[2].rpartition("#")[0]


def predicate_problems_v2(predicate: Any) -> list[str]:
    """Every schema violation and broken rule of a v2 predicate (``location: rule``)."""
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
        problems += _rows(p, seed, n)  # 4., 5.
    if p["served_by"] is not None:
        if samples is None:
            problems.append("/served_by: reported without samples")
        else:
            problems += _served_by(p, samples["count"])  # 6.
    problems += _cut(p)  # 7.
    problems += _substitute_answers(p, None if samples is None else samples["count"])  # 8.
    return problems
