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
6. What is reported is bounded: the mean and interval ends quantised to the declared
   resolution and clamped to [-1, 1]; per-sample deltas only as counts in the fixed
   bins of ``_quantize.BIN_EDGES``. Steps 4-5 decide on the exact values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ledger import CanonicalizationError

from ..analysis import clopper_pearson, mean_interval
from ._compare import compare_layers
from ._errors import VALUE_OUT_OF_RANGE
from ._model import RunResult, Tolerances
from ._quantize import BIN_EDGES, histogram, quantize, resolution_for
from ._results import SampleSummary

__all__ = ["Verdict", "auditability_of", "decide", "summarize_seed"]

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


def auditability_of(samples: Sequence[SampleSummary]) -> dict[str, Any]:
    live_reads = sorted({field for s in samples for _, field in s.live_state_reads})
    read_calls = [call for s in samples for call, _ in s.live_state_reads]
    unverifiable = [c for s in samples for c in s.unverifiable_effects]
    unserved = [c for s in samples for c in s.unserved_effects]
    first = next(iter(unverifiable or unserved or read_calls), None)
    reasons = []
    if unverifiable:
        reasons.append("an effect's idempotency token can no longer be re-verified")
    if unserved:
        reasons.append("an effect could not be served from the effect store")
    if live_reads:
        reasons.append(
            "the branch read live-state fields of a served response after the departure point"
        )
    return {
        "class": OBSERVABLE_ONLY if reasons else ADMISSIBLE,
        "first_unverifiable_step": first,
        "live_state_fields": live_reads,
        "reason": "; ".join(reasons)
        if reasons
        else "every effect re-verified; no live state read after departure",
    }


def decide(*, samples: Sequence[SampleSummary], tolerances: Tolerances) -> Verdict:
    auditability = auditability_of(samples)
    observable_only = auditability["class"] == OBSERVABLE_ONLY
    # 1. failed runs
    for sample in samples:
        if sample.failure is None:
            continue
        if (
            observable_only
            and sample.failure == "unservable"
            and sample.failure_variant == "intervened"
        ):
            continue
        return Verdict(
            FAILED,
            auditability,
            None,
            None,
            sample.failure,
            f"{sample.failure_variant} run on seed {sample.seed}",
        )
    # 2. observable-only: report, do not conclude
    if observable_only:
        return Verdict(OBSERVABLE_ONLY, auditability, None, None)
    # 3. placebo
    resolution = resolution_for(tolerances.score)
    placebo = {
        "passed": all(s.placebo_equal for s in samples),
        "max_abs_delta": quantize(
            max((s.placebo_abs_delta for s in samples), default=0.0), resolution, 0.0, 1.0
        ),
        "flips": sum(1 for s in samples if s.placebo_flip),
    }
    if not placebo["passed"]:
        return Verdict(
            FAILED, auditability, None, placebo, "apparatus_fault", "placebo differed from baseline"
        )
    # 4. effect
    deltas = [float(s.delta or 0.0) for s in samples]
    n = len(deltas)
    flip_count = sum(1 for s in samples if s.flip)
    mean = math.fsum(deltas) / n
    _, lo, hi = mean_interval(deltas)
    lo, hi = min(lo, mean), max(hi, mean)  # identical deltas: keep the last ulp consistent
    flip_lo, flip_hi = clopper_pearson(flip_count, n)
    # 5. classification, on the exact values
    outside = lo > tolerances.score or hi < -tolerances.score
    label = INFLUENTIAL if flip_count > 0 or outside else NO_INFLUENCE
    # 6. what leaves
    effect = {
        "mean_delta": quantize(mean, resolution),
        "delta_interval": [quantize(lo, resolution), quantize(hi, resolution)],
        "flip_rate": flip_count / n,
        "flip_interval": [flip_lo, flip_hi],
        "baseline_rate": sum(1 for s in samples if s.baseline_hit) / n,
        "intervened_rate": sum(1 for s in samples if s.intervened_hit) / n,
        "histogram": {"edges": list(BIN_EDGES), "counts": histogram(deltas)},
        "confidence": 0.95,
    }
    return Verdict(label, auditability, effect, placebo)


def summarize_seed(
    baseline: RunResult, intervened: RunResult, placebo: RunResult, *, recorded_decision: Any
) -> SampleSummary:
    """Reduce one seed's three runs to metadata, inside the enclave."""
    reads, unverifiable, unserved = (
        intervened.live_state_reads,
        intervened.unverifiable_effects,
        intervened.unserved_effects,
    )
    for run in (baseline, placebo, intervened):
        if run.failure is not None:
            return SampleSummary(
                seed=baseline.seed,
                failure=run.failure,
                failure_variant=run.variant,
                live_state_reads=reads,
                unverifiable_effects=unverifiable,
                unserved_effects=unserved,
            )
    assert (
        baseline.layers is not None and intervened.layers is not None and placebo.layers is not None
    )
    try:
        twin = compare_layers(baseline.layers, placebo.layers, Tolerances(score=0.0))
        delta = float(intervened.layers["score"]) - float(baseline.layers["score"])
        if not math.isfinite(delta):
            raise ValueError("not a finite delta")
        return SampleSummary(
            seed=baseline.seed,
            delta=delta,
            flip=bool(baseline.layers["decision"] != intervened.layers["decision"]),
            baseline_hit=bool(baseline.layers["decision"] == recorded_decision),
            intervened_hit=bool(intervened.layers["decision"] == recorded_decision),
            placebo_equal=all(v.get("equal", v["ok"]) for v in twin.values()),
            placebo_abs_delta=abs(twin["score"]["delta"] or 0.0),
            placebo_flip=bool(baseline.layers["decision"] != placebo.layers["decision"]),
            live_state_reads=reads,
            unverifiable_effects=unverifiable,
            unserved_effects=unserved,
        )
    except (CanonicalizationError, TypeError, ValueError, OverflowError):
        # an outcome the enclave cannot compare exactly (2**60, NaN, a score that is no number)
        return SampleSummary(
            seed=baseline.seed,
            failure=VALUE_OUT_OF_RANGE,
            failure_variant="intervened",
            live_state_reads=reads,
            unverifiable_effects=unverifiable,
            unserved_effects=unserved,
        )
