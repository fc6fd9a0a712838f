"""Intervals: cross-checked against SciPy (test-only dependency) and by properties."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from ledger.certificates.statistics import (
    clopper_pearson,
    mean_interval,
    regularized_beta,
    student_t_quantile,
)

RTOL = 1e-9
CONFIDENCES = (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)


def _scipy_cp(k: int, n: int, confidence: float) -> tuple[float, float]:
    alpha = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def _cp_cases() -> list[tuple[int, int]]:
    cases = set()
    for n in (1, 2, 3, 5, 7, 10, 20, 30, 50, 100, 333, 1000):
        for k in (0, 1, 2, n // 3, n // 2, n - 2, n - 1, n):
            if 0 <= k <= n:
                cases.add((k, n))
    return sorted(cases)


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize(("k", "n"), _cp_cases())
def test_clopper_pearson_matches_scipy(k: int, n: int, confidence: float) -> None:
    lo, hi = clopper_pearson(k, n, confidence)
    want_lo, want_hi = _scipy_cp(k, n, confidence)
    assert lo == pytest.approx(want_lo, rel=RTOL, abs=1e-300)
    assert hi == pytest.approx(want_hi, rel=RTOL, abs=1e-300)


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_clopper_pearson_edges_have_closed_forms(n: int) -> None:
    # k = 0: hi = 1 - (alpha/2)^(1/n); k = n: lo = (alpha/2)^(1/n)
    lo, hi = clopper_pearson(0, n)
    assert lo == 0.0
    assert hi == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-12)
    lo, hi = clopper_pearson(n, n)
    assert hi == 1.0
    assert lo == pytest.approx(0.025 ** (1 / n), rel=1e-12)


def test_clopper_pearson_single_trial() -> None:
    lo, hi = clopper_pearson(0, 1)
    assert lo == 0.0 and hi == pytest.approx(0.975, rel=1e-12)
    lo, hi = clopper_pearson(1, 1)
    assert lo == pytest.approx(0.025, rel=1e-12) and hi == 1.0


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((1, 0), ValueError),
        ((-1, 5), ValueError),
        ((6, 5), ValueError),
        ((1, 5, 0.0), ValueError),
        ((1, 5, 1.0), ValueError),
        ((1.0, 5), TypeError),
        ((True, 5), TypeError),
    ],
)
def test_clopper_pearson_refuses_misuse(args: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        clopper_pearson(*args)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=2000),
    frac=st.floats(min_value=0, max_value=1),
    confidence=st.floats(min_value=0.5, max_value=0.9999),
)
def test_clopper_pearson_properties(n: int, frac: float, confidence: float) -> None:
    k = round(frac * n)
    lo, hi = clopper_pearson(k, n, confidence)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    # a higher confidence never gives a narrower interval
    wider_lo, wider_hi = clopper_pearson(k, n, min(0.99995, confidence + 0.0001))
    assert wider_lo <= lo + 1e-12 and wider_hi >= hi - 1e-12


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 19, 29, 99, 999, 10_000])
@pytest.mark.parametrize("p", [0.001, 0.1, 0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995])
def test_student_t_quantile_matches_scipy(df: int, p: float) -> None:
    assert student_t_quantile(p, df) == pytest.approx(
        float(stats.t.ppf(p, df)), rel=RTOL, abs=1e-15
    )


def test_student_t_known_value() -> None:
    assert student_t_quantile(0.975, 1) == pytest.approx(12.706204736174698, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    a=st.floats(min_value=0.05, max_value=2000),
    b=st.floats(min_value=0.05, max_value=2000),
    x=st.floats(min_value=0, max_value=1),
)
def test_regularized_beta_matches_scipy(a: float, b: float, x: float) -> None:
    assert regularized_beta(a, b, x) == pytest.approx(
        float(special.betainc(a, b, x)), rel=1e-9, abs=1e-14
    )


def _scipy_mean_interval(values: list[float], confidence: float) -> tuple[float, float, float]:
    mean = statistics.fmean(values)
    sem = statistics.stdev(values) / math.sqrt(len(values))
    lo, hi = stats.t.interval(confidence, len(values) - 1, loc=mean, scale=sem)
    return mean, float(lo), float(hi)


@pytest.mark.parametrize(
    "values",
    [
        [0.1, -0.2],
        [-0.031, -0.045, -0.012, -0.05, -0.038],
        [0.0, 0.0, 0.0, 1.0],
        [i / 1000 - 0.5 for i in range(1000)],
        [0.5 + 1e-9 * (i % 7) for i in range(50)],
    ],
)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_mean_interval_matches_scipy(values: list[float], confidence: float) -> None:
    got = mean_interval(values, confidence)
    want = _scipy_mean_interval(values, confidence)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, rel=1e-9, abs=1e-12)


def test_mean_interval_rules() -> None:
    with pytest.raises(ValueError):
        mean_interval([])
    with pytest.raises(ValueError):
        mean_interval([0.3])  # one value has no spread: refused, not a zero-width interval
    assert mean_interval([0.25, 0.25, 0.25]) == (0.25, 0.25, 0.25)
    with pytest.raises(ValueError):
        mean_interval([0.1, math.nan])
    with pytest.raises(ValueError):
        mean_interval([0.1, math.inf])
    with pytest.raises(ValueError):
        mean_interval([0.1, 0.2], confidence=1.5)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=2, max_size=200
    ),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_mean_interval_properties(values: list[float], confidence: float) -> None:
    mean, lo, hi = mean_interval(values, confidence)
    assert lo <= mean <= hi
    assert min(values) - 1e-12 <= mean <= max(values) + 1e-12
    assert math.isfinite(lo) and math.isfinite(hi)
    if len(set(values)) == 1:
        assert lo == mean == hi
