"""What the worker sends back to the supervisor: one run as ``run_wire``, and one
seed's three runs reduced to metadata as ``summarize_seed`` (only metadata crosses the
wall for a sample). Either may have been tampered with by the agent code the worker
ran: the supervisor takes them only through ``enclave.replay._reply``'s closed schema.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ledger import CanonicalizationError

from .._compare import compare_layers
from .._decisions import decision_label
from .._errors import VALUE_OUT_OF_RANGE
from .._model import LAYERS, RunResult, Tolerances
from .._results import SampleSummary
from ._served import extrapolated, marks_of

__all__ = ["run_wire", "summarize_seed"]


def run_wire(result: RunResult) -> dict[str, Any]:
    """What the worker sends for one run: no failure text; the serving trace as call ids
    and ways (renamed by the supervisor)."""
    failure = result.failure
    return {
        "seed": result.seed,
        "variant": result.variant,
        "failure": failure,
        "layers": None if result.layers is None else dict(result.layers),
        "live_state_reads": [list(x) for x in dict.fromkeys(result.live_state_reads)],
        "unverifiable_effects": list(dict.fromkeys(result.unverifiable_effects)),
        "unserved_effects": list(dict.fromkeys(result.unserved_effects)),
        "served": [list(x) for x in result.served],
        "unused": list(dict.fromkeys(result.unused)),
    }


def _score_delta(baseline: RunResult, intervened: RunResult) -> float | None:
    """None when neither run has a score (a categorical outcome); a score on one side
    only, or a non-number, is not comparable (``ValueError``)."""
    a, b = baseline.layers["score"], intervened.layers["score"]  # type: ignore[index]
    if a is None and b is None:
        return None
    if isinstance(a, bool) or isinstance(b, bool):
        raise ValueError("a score is no number")
    delta = float(b) - float(a)
    if not math.isfinite(delta):
        raise ValueError("not a finite delta")
    return delta


def summarize_seed(
    baseline: RunResult,
    intervened: RunResult,
    placebo: RunResult,
    *,
    recorded_decision: Any,
    declared_decisions: Sequence[str] = (),
    boundaries: frozenset[str] = frozenset(),
) -> SampleSummary:
    """Reduce one seed's three runs to metadata, inside the enclave. ``boundaries``: the
    record's boundary names (``_model.boundary_names``), which a summary may name."""
    reads, unverifiable, unserved = (
        intervened.live_state_reads,
        intervened.unverifiable_effects,
        intervened.unserved_effects,
    )
    served = tuple(m for run in (baseline, intervened, placebo) for m in marks_of(run))
    substituted = extrapolated((baseline, intervened, placebo), boundaries)
    for run in (baseline, placebo, intervened):
        if run.failure is not None:
            return SampleSummary(
                seed=baseline.seed,
                failure=run.failure,
                failure_variant=run.variant,
                live_state_reads=reads,
                unverifiable_effects=unverifiable,
                unserved_effects=unserved,
                served=served,
                substituted=substituted,
            )
    assert (
        baseline.layers is not None and intervened.layers is not None and placebo.layers is not None
    )
    try:
        twin = compare_layers(baseline.layers, placebo.layers, Tolerances(score=0.0))
        arms = compare_layers(baseline.layers, intervened.layers, Tolerances(score=0.0))
        delta = _score_delta(baseline, intervened)
        b, i = baseline.layers["decision"], intervened.layers["decision"]
        return SampleSummary(
            seed=baseline.seed,
            delta=delta,
            flip=bool(b != i),
            baseline_hit=bool(b == recorded_decision),
            intervened_hit=bool(i == recorded_decision),
            placebo_equal=all(v.get("equal", v["ok"]) for v in twin.values()),
            placebo_abs_delta=abs(twin["score"]["delta"] or 0.0),
            placebo_flip=bool(b != placebo.layers["decision"]),
            live_state_reads=reads,
            unverifiable_effects=unverifiable,
            unserved_effects=unserved,
            baseline_decision=decision_label(
                b, recorded=recorded_decision, declared=declared_decisions
            ),
            intervened_decision=decision_label(
                i, recorded=recorded_decision, declared=declared_decisions
            ),
            changed_layers=tuple(
                layer for layer in LAYERS if not arms[layer].get("equal", arms[layer]["ok"])
            ),
            served=served,
            substituted=substituted,
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
            served=served,
            substituted=substituted,
        )
