"""Figures a v3 certificate derives from its reported interval instead of stating them.

A v2 certificate states the TOST interval and the minimum detectable delta as fields
of their own, each worth ~11–14 bits an agent could choose. Both follow from the
Student-t interval of the same paired deltas, which scales ``s/√n`` by a quantile: so a
v3 certificate reports the mean and the two-sided interval only, and the issuer and
every verifier compute the other two from them, on the grid, the same way.

They are never bolder than the exact figures:

* the two-sided interval is reported outward on the grid around a mean rounded to the
  nearest step, so the larger of its two half-widths ``h`` (in steps, from the reported
  mean) is at least the exact ``t(1-c/2) · s/√n`` — the two add up to at least twice
  it. Where one end is clamped at ±1 only the other end measures it, to within half a
  step, so ``h`` gains half a step; where both ends are clamped nothing is known of it;
* the TOST interval is the mean ± ``k · h`` with ``k = t(1-α) / t(1-c/2)``, widened by
  half a step (the mean's rounding), outward on the grid, and clipped to the two-sided
  interval (which holds the exact TOST interval); with both ends clamped it is the
  two-sided interval itself;
* the minimum detectable delta is ``tolerance + (t(1-c/2) + t(power)) / t(1-c/2) · h``
  rounded up to the grid, at most 1 (and 1 with both ends clamped).

Degenerate intervals (every delta equal) stay degenerate: ``h = 0`` gives the mean's
own grid point, clipped to ``[lo, hi]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._grid import on_grid
from ._intervals import student_t_quantile

__all__ = ["derived_delta_mde", "derived_equivalence"]

_SLACK = 1e-9  # float noise on a grid step count: a hair never crosses a step


def _steps(value: float, resolution: float) -> float:
    return value / resolution


def _half(mean: float, interval: Sequence[float], resolution: float) -> float | None:
    """``h`` in grid steps (see above); ``None`` when both ends are clamped."""
    lo, hi = interval
    if lo <= -1 and hi >= 1:
        return None
    m = _steps(mean, resolution)
    half = max(0.0, m - _steps(lo, resolution), _steps(hi, resolution) - m)
    return half + 0.5 if lo <= -1 or hi >= 1 else half


def derived_equivalence(
    mean: float,
    interval: Sequence[float],
    *,
    n: int,
    resolution: float,
    confidence: float,
    alpha: float,
) -> tuple[float, float]:
    """The TOST (``1 - 2α``) interval a v3 certificate implies (see the module text)."""
    if n < 2:
        raise ValueError("an interval needs at least two samples")
    lo, hi = interval
    k = student_t_quantile(1 - alpha, n - 1) / student_t_quantile(1 - (1 - confidence) / 2, n - 1)
    half = _half(mean, interval, resolution)
    if half is None:
        return lo, hi
    centre = round(_steps(mean, resolution))
    reach = k * half
    if reach == 0:
        down, up = centre, centre
    else:
        down = math.floor(centre - reach - 0.5 + _SLACK)
        up = math.ceil(centre + reach + 0.5 - _SLACK)
    return max(lo, min(mean, on_grid(down, resolution))), min(
        hi, max(mean, on_grid(up, resolution))
    )


def derived_delta_mde(
    mean: float,
    interval: Sequence[float],
    *,
    n: int,
    resolution: float,
    tolerance: float,
    confidence: float,
    power: float,
) -> float:
    """The minimum detectable mean delta a v3 certificate implies (see the module text)."""
    if n < 2:
        raise ValueError("a minimum detectable delta needs at least two samples")
    half = _half(mean, interval, resolution)
    if half is None:
        return 1.0
    t_c = student_t_quantile(1 - (1 - confidence) / 2, n - 1)
    z = t_c + student_t_quantile(power, n - 1)
    steps = _steps(tolerance, resolution) + z / t_c * half
    return min(1.0, max(min(1.0, tolerance), on_grid(math.ceil(steps - _SLACK), resolution)))
