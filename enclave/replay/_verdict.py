"""From replayed runs to a verdict: auditability, placebo, effect, classification.

Numbered like the README's "How an audit decides":

1. Any contaminated or failed run fails the audit (no partial score). Exception: once
   the branch is observable-only, a later call the record cannot serve is expected —
   that is what observable-only means — and is reported, not concluded from.
2. Auditability: the branch is counterfactual-admissible only if every effect it met was
   served from the effect store with a re-verifiable idempotency token and no live-state
   field of a served response was read after the departure point.
3. The placebo (target replaced by its own value) must equal the paired baseline on
   every layer and seed; any difference is an apparatus fault and fails the audit.
4. Effect: paired score deltas (mean, Student-t 95% interval), decision flips
   (Clopper-Pearson exact 95% interval), the recorded decision's rate in each arm.
5. Influential if any decision flipped or the delta interval lies wholly outside the
   declared score tolerance; otherwise no measurable influence within tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis import clopper_pearson, mean_interval
from ._compare import compare_layers
from ._model import RunResult, Tolerances

__all__ = ["Verdict", "auditability_of", "decide"]

INFLUENTIAL = "influential"
NO_INFLUENCE = "no-measurable-influence"
BASELINE_NOT_REPRODUCED = "baseline-not-reproduced"
OBSERVABLE_ONLY = "observable-only"
FAILED = "failed"
ADMISSIBLE = "counterfactual-admissible"


@dataclass(frozen=True)
class Verdict:
    classification: str
    auditability: dict[str, Any]
    effect: dict[str, Any] | None
    placebo: dict[str, Any] | None
    failure: str | None = None
    failure_detail: str | None = None


def auditability_of(runs: Sequence[RunResult]) -> dict[str, Any]:
    live_reads = sorted({field for run in runs for _, field in run.live_state_reads})
    read_calls = [call for run in runs for call, _ in run.live_state_reads]
    unverifiable = [c for run in runs for c in run.unverifiable_effects]
    unserved = [c for run in runs for c in run.unserved_effects]
    first = next(iter(unverifiable or unserved or read_calls), None)
    reasons = []
    if unverifiable:
        reasons.append("an effect's idempotency token can no longer be re-verified")
    if unserved:
        reasons.append("an effect could not be served from the effect store")
    if live_reads:
        reasons.append("the branch read live-state fields of a served response after the departure point")
    return {
        "class": OBSERVABLE_ONLY if reasons else ADMISSIBLE,
        "first_unverifiable_step": first,
        "live_state_fields": live_reads,
        "reason": "; ".join(reasons) if reasons else "every effect re-verified; no live state read after departure",
    }


def _failed(runs: Sequence[RunResult], *, tolerate_unservable: bool) -> RunResult | None:
    for run in runs:
        if run.failure is None:
            continue
        if tolerate_unservable and run.failure == "unservable":
            continue
        return run
    return None


def decide(
    *,
    baseline: Sequence[RunResult],
    intervened: Sequence[RunResult],
    placebo: Sequence[RunResult],
    recorded_decision: Any,
    tolerances: Tolerances,
) -> Verdict:
    auditability = auditability_of(intervened)
    observable_only = auditability["class"] == OBSERVABLE_ONLY
    # 1. failed runs
    bad = _failed(list(baseline) + list(placebo), tolerate_unservable=observable_only) or _failed(
        intervened, tolerate_unservable=observable_only
    )
    if bad is not None:
        return Verdict(FAILED, auditability, None, None, bad.failure, f"{bad.variant} run on seed {bad.seed}")
    # 2. observable-only: report, do not conclude
    if observable_only:
        return Verdict(OBSERVABLE_ONLY, auditability, None, None)
    # 3. placebo
    max_abs, flips, differs = 0.0, 0, False
    for base, twin in zip(baseline, placebo, strict=True):
        assert base.layers is not None and twin.layers is not None
        layers = compare_layers(base.layers, twin.layers, Tolerances(score=0.0))
        max_abs = max(max_abs, abs(layers["score"]["delta"]))
        flips += int(base.layers["decision"] != twin.layers["decision"])
        differs = differs or not all(v.get("equal", v["ok"]) for v in layers.values())
    placebo_summary = {"passed": not differs, "max_abs_delta": max_abs, "flips": flips}
    if differs:
        return Verdict(FAILED, auditability, None, placebo_summary, "apparatus_fault", "placebo differed from baseline")
    # 4. effect
    deltas, flip_count, base_hits, iv_hits = [], 0, 0, 0
    for base, iv in zip(baseline, intervened, strict=True):
        assert base.layers is not None and iv.layers is not None
        deltas.append(float(iv.layers["score"]) - float(base.layers["score"]))
        flip_count += int(base.layers["decision"] != iv.layers["decision"])
        base_hits += int(base.layers["decision"] == recorded_decision)
        iv_hits += int(iv.layers["decision"] == recorded_decision)
    n = len(deltas)
    mean = math.fsum(deltas) / n
    _, lo, hi = mean_interval(deltas)
    lo, hi = min(lo, mean), max(hi, mean)  # identical deltas: keep the last ulp consistent
    flip_lo, flip_hi = clopper_pearson(flip_count, n)
    effect = {
        "mean_delta": mean,
        "delta_interval": [lo, hi],
        "flip_rate": flip_count / n,
        "flip_interval": [flip_lo, flip_hi],
        "baseline_rate": base_hits / n,
        "intervened_rate": iv_hits / n,
        "deltas": deltas,
        "confidence": 0.95,
    }
    # 5. classification
    outside = lo > tolerances.score or hi < -tolerances.score
    label = INFLUENTIAL if flip_count > 0 or outside else NO_INFLUENCE
    return Verdict(label, auditability, effect, placebo_summary)
