"""The figures a v3 certificate derives rather than states are never bolder than the
exact ones: the derived TOST interval holds the exact TOST interval, the derived minimum
detectable delta is at least the exact one, and both follow from the reported (outward
quantised) interval alone."""

from __future__ import annotations

import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from enclave.replay.disclosure import quantize, quantize_interval
from ledger.certificates.statistics import (
    delta_mde,
    derived_delta_mde,
    derived_equivalence,
    mean_interval,
)

CONFIDENCE, ALPHA, POWER = 0.95, 0.05, 0.8
RESOLUTIONS = st.sampled_from([1e-4, 0.001, 0.0025, 0.01, 0.05])
DELTAS = st.lists(
    st.floats(min_value=-1, max_value=1, allow_nan=False, allow_subnormal=False),
    min_size=2,
    max_size=120,
)


def _reported(deltas: list[float], resolution: float) -> tuple[float, tuple[float, float]]:
    mean, lo, hi = mean_interval(deltas, CONFIDENCE)
    return quantize(mean, resolution), quantize_interval(min(lo, mean), max(hi, mean), resolution)


@settings(max_examples=400, deadline=None)
@given(deltas=DELTAS, resolution=RESOLUTIONS)
def test_the_derived_tost_interval_holds_the_exact_one(
    deltas: list[float], resolution: float
) -> None:
    mean, interval = _reported(deltas, resolution)
    lo, hi = derived_equivalence(
        mean, interval, n=len(deltas), resolution=resolution, confidence=CONFIDENCE, alpha=ALPHA
    )
    exact_mean, exact_lo, exact_hi = mean_interval(deltas, 1 - 2 * ALPHA)
    exact_lo, exact_hi = max(-1.0, min(exact_lo, exact_mean)), min(1.0, max(exact_hi, exact_mean))
    assert lo <= exact_lo + 1e-9 and exact_hi - 1e-9 <= hi  # as reported: within [-1, 1]
    assert interval[0] <= lo <= mean <= hi <= interval[1]  # nested around the mean


@settings(max_examples=400, deadline=None)
@given(
    deltas=DELTAS,
    resolution=RESOLUTIONS,
    tolerance=st.sampled_from([0.0, 0.001, 0.01, 0.05]),
)
def test_the_derived_mde_is_at_least_the_exact_one(
    deltas: list[float], resolution: float, tolerance: float
) -> None:
    mean, interval = _reported(deltas, resolution)
    n = len(deltas)
    derived = derived_delta_mde(
        mean,
        interval,
        n=n,
        resolution=resolution,
        tolerance=tolerance,
        confidence=CONFIDENCE,
        power=POWER,
    )
    exact = delta_mde(
        sd=statistics.stdev(deltas), n=n, tolerance=tolerance, confidence=CONFIDENCE, power=POWER
    )
    assert derived >= min(1.0, exact) - 1e-9
    assert math.isclose(derived / resolution, round(derived / resolution)) or derived == 1.0


def test_identical_deltas_give_a_point_and_zero_tolerance_can_still_be_met() -> None:
    mean, interval = _reported([0.0] * 20, 1e-4)
    assert interval == (0.0, 0.0)
    eq = derived_equivalence(
        mean, interval, n=20, resolution=1e-4, confidence=CONFIDENCE, alpha=ALPHA
    )
    assert eq == (0.0, 0.0)
    mde = derived_delta_mde(
        mean, interval, n=20, resolution=1e-4, tolerance=0.0, confidence=CONFIDENCE, power=POWER
    )
    assert mde == 0.0
