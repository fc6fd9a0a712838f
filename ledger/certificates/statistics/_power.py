"""Minimum detectable effects: what an audit of N paired samples could have seen.

* ``delta_mde`` — the smallest true mean paired delta that the influence rule (the
  two-sided Student-t interval wholly beyond the tolerance) detects with probability
  ``power``, at the observed standard deviation ``s``:
  ``tolerance + (t(1-alpha/2, n-1) + t(power, n-1)) * s / sqrt(n)``.
* ``flip_mde`` — the smallest true flip rate ``p`` at which N samples show at least
  ``min_flips`` flips (what the flip rule needs) with probability ``power``; found by
  bisection on ``P(Binomial(n, p) >= min_flips)``, which increases with ``p``. ``None``
  when N is too small ever to show that many flips.
"""

from __future__ import annotations

import math

from ._intervals import student_t_quantile

__all__ = ["DEFAULT_POWER", "delta_mde", "flip_mde"]

DEFAULT_POWER = 0.8
_BISECTIONS = 200


def delta_mde(
    *, sd: float, n: int, tolerance: float, confidence: float = 0.95, power: float = DEFAULT_POWER
) -> float:
    if n < 2:
        raise ValueError("a minimum detectable delta needs at least two samples")
    if not (math.isfinite(sd) and sd >= 0 and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError("sd and tolerance must be finite and non-negative")
    if not (0 < confidence < 1 and 0 < power < 1):
        raise ValueError("confidence and power must lie strictly between 0 and 1")
    z = student_t_quantile(1 - (1 - confidence) / 2, n - 1) + student_t_quantile(power, n - 1)
    return tolerance + z * sd / math.sqrt(n)


def _at_least(k: int, n: int, p: float) -> float:
    """``P(Binomial(n, p) >= k)``."""
    if p <= 0.0:
        return 0.0 if k > 0 else 1.0
    if p >= 1.0:
        return 1.0 if k <= n else 0.0
    below = math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(min(k, n + 1)))
    return max(0.0, 1.0 - below)


def flip_mde(n: int, *, min_flips: int = 2, power: float = DEFAULT_POWER) -> float | None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")
    if not 0 < power < 1:
        raise ValueError("power must lie strictly between 0 and 1")
    if n < min_flips:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _at_least(min_flips, n, mid) < power:
            lo = mid
        else:
            hi = mid
    return hi
