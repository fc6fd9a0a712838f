"""Exact and Student-t intervals in pure Python (no numerical library at runtime).

Both intervals come from one special function, the regularised incomplete beta
``I_x(a, b)``, evaluated with the continued fraction of Numerical Recipes §6.4
(modified Lentz) and inverted by bisection:

* ``clopper_pearson`` — the exact binomial interval. For ``k`` successes in ``n``
  trials and ``alpha = 1 - confidence``, the bounds are the ``alpha/2`` quantile of
  ``Beta(k, n-k+1)`` and the ``1-alpha/2`` quantile of ``Beta(k+1, n-k)``; the lower
  bound is 0 when ``k == 0`` and the upper bound is 1 when ``k == n``.
* ``mean_interval`` — mean ± ``t(1-alpha/2, n-1) · s/√n`` with the sample standard
  deviation ``s`` (ddof 1). The t quantile inverts
  ``P(|T| > t) = I_{ν/(ν+t²)}(ν/2, 1/2)``.

Rules decided here:

* One value has no spread to estimate: ``mean_interval`` refuses ``n < 2``
  (``ValueError``) rather than report a zero-width interval that overstates
  certainty. Audits therefore need at least two paired samples.
* Values that are all exactly equal give the degenerate interval ``(m, m, m)``.
* Every input must be finite; confidence must lie strictly between 0 and 1.
* Results are accurate to about 1e-10 relative or better
  (``tests/unit/certificates/test_intervals.py`` cross-checks against SciPy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["clopper_pearson", "mean_interval", "student_t_quantile", "regularized_beta"]

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 100_000
_MAX_BISECTIONS = 2_000


def _check_confidence(confidence: float) -> float:
    if not isinstance(confidence, int | float) or isinstance(confidence, bool):
        raise TypeError("confidence must be a number")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    return float(confidence)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction for I_x(a, b); converges fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _TINY if abs(d) < _TINY else d
        c = 1.0 + aa / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) <= _EPS:
            return h
    raise ArithmeticError("incomplete beta continued fraction did not converge")


def regularized_beta(a: float, b: float, x: float) -> float:
    """``I_x(a, b)`` for ``a, b > 0`` and ``0 <= x <= 1``."""
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError("beta parameters must be positive and finite")
    if not 0.0 <= x <= 1.0:
        raise ValueError("x must lie in [0, 1]")
    if x == 0.0:
        return 0.0
    if x == 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return min(1.0, front * _beta_continued_fraction(a, b, x) / a)
    return max(0.0, 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b)


def _beta_quantile(q: float, a: float, b: float) -> float:
    """The ``x`` in [0, 1] with ``I_x(a, b) = q`` (bisection to float resolution)."""
    lo, hi = 0.0, 1.0
    for _ in range(_MAX_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi) or hi - lo <= 1e-15 * hi:
            break
        if regularized_beta(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided binomial interval ``(lo, hi)`` with ``0 <= lo <= k/n <= hi <= 1``."""
    if isinstance(successes, bool) or isinstance(trials, bool):
        raise TypeError("successes and trials must be integers")
    if not isinstance(successes, int) or not isinstance(trials, int):
        raise TypeError("successes and trials must be integers")
    if trials < 1:
        raise ValueError("an interval needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError("successes must lie between 0 and trials")
    alpha = 1.0 - _check_confidence(confidence)
    k, n = successes, trials
    lo = 0.0 if k == 0 else _beta_quantile(alpha / 2.0, k, n - k + 1)
    hi = 1.0 if k == n else _beta_quantile(1.0 - alpha / 2.0, k + 1, n - k)
    p_hat = k / n
    # bisection tolerance must never put the point estimate outside its interval
    return min(lo, p_hat), max(hi, p_hat)


def _t_two_sided_tail(t: float, df: float) -> float:
    """``P(|T| > t)`` for Student's t with ``df`` degrees of freedom, ``t >= 0``."""
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df > 0`` degrees of freedom."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie strictly between 0 and 1")
    if not (df > 0 and math.isfinite(df)):
        raise ValueError("degrees of freedom must be positive and finite")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    tail = 2.0 * (1.0 - p)  # two-sided tail mass beyond the quantile
    lo, hi = 0.0, 1.0
    while _t_two_sided_tail(hi, df) > tail:
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            raise ArithmeticError("t quantile out of range")
    for _ in range(_MAX_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi) or hi - lo <= 1e-15 * hi:
            break
        if _t_two_sided_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the Student-t interval for the mean of ``values``.

    Needs at least two finite values; all-equal values give ``(m, m, m)``.
    """
    level = _check_confidence(confidence)
    data = [float(v) for v in values]
    n = len(data)
    if n < 2:
        raise ValueError("a mean interval needs at least two values")
    if not all(math.isfinite(v) for v in data):
        raise ValueError("values must be finite")
    mean = math.fsum(data) / n
    if all(v == data[0] for v in data):
        return data[0], data[0], data[0]
    variance = math.fsum((v - mean) ** 2 for v in data) / (n - 1)
    half = student_t_quantile(1.0 - (1.0 - level) / 2.0, n - 1) * math.sqrt(variance / n)
    return mean, mean - half, mean + half
