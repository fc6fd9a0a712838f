"""Numbers that leave the enclave: clamped, quantised, and summarised in fixed bins.

A number an agent can influence carries as many bits as it has possible values. Every
such number in a certificate is therefore clamped to declared bounds (``[-1, 1]`` for
deltas, ``[0, 1]`` for magnitudes) and rounded to a declared *resolution*; per-sample
values never leave at all — they are counted into a histogram whose bin edges are
fixed here, before any sample runs.

The resolution defaults to the audit's score tolerance, but never finer than 4
significant digits on the unit scale (``1e-4``), and is itself kept to 4 significant
digits.

An interval is quantised *outward* (``quantize_interval``: its lower end down, its upper
end up), so the reported interval holds the exact one and a label decided on the
reported ends is never bolder than the exact values allow; a bound that must not be
understated (a minimum detectable effect) is rounded up (``quantize_up``).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from ledger.certificates.statistics import on_grid

__all__ = [
    "BIN_EDGES",
    "MIN_RESOLUTION",
    "grid_values",
    "histogram",
    "quantize",
    "quantize_interval",
    "quantize_up",
    "resolution_for",
]

MIN_RESOLUTION = 1e-4

# Fixed, symmetric, finer near zero: paired deltas of interest are small.
_POSITIVE = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
BIN_EDGES: tuple[float, ...] = tuple(-e for e in reversed(_POSITIVE[1:])) + _POSITIVE


def resolution_for(tolerance: float) -> float:
    """The declared resolution for a score tolerance: at least ``MIN_RESOLUTION``, at
    most 1, rounded to 4 significant digits."""
    if not math.isfinite(tolerance):
        raise ValueError("a tolerance must be finite")
    value = min(1.0, max(MIN_RESOLUTION, tolerance))
    return float(f"{value:.4g}")


def quantize(value: float, resolution: float, lo: float = -1.0, hi: float = 1.0) -> float:
    """``value`` clamped to ``[lo, hi]`` and rounded to the nearest multiple of
    ``resolution`` (NaN is refused by the caller's validation before this), written as
    the verifier's grid writes it (``statistics.on_grid``)."""
    clamped = min(hi, max(lo, float(value)))
    return on_grid(round(clamped / resolution), resolution, lo, hi)


def quantize_interval(
    low: float, high: float, resolution: float, lo: float = -1.0, hi: float = 1.0
) -> tuple[float, float]:
    """``[low, high]`` widened to the ``resolution`` grid (down, up), clamped."""
    a = math.floor(min(hi, max(lo, float(low))) / resolution + 1e-9)
    b = math.ceil(min(hi, max(lo, float(high))) / resolution - 1e-9)
    # the grid may sit a hair inside the exact end after rounding: step once more
    out_lo, out_hi = on_grid(a, resolution, lo, hi), on_grid(b, resolution, lo, hi)
    if out_lo > low and out_lo > lo:
        out_lo = on_grid(a - 1, resolution, lo, hi)
    if out_hi < high and out_hi < hi:
        out_hi = on_grid(b + 1, resolution, lo, hi)
    return out_lo, out_hi


def quantize_up(value: float, resolution: float, lo: float = 0.0, hi: float = 1.0) -> float:
    """``value`` rounded up to the ``resolution`` grid, clamped to ``[lo, hi]``."""
    return quantize_interval(value, value, resolution, lo, hi)[1]


def grid_values(resolution: float, lo: float = -1.0, hi: float = 1.0) -> int:
    """An upper bound on how many values ``quantize`` can return on ``[lo, hi]``: the
    multiples of ``resolution`` inside, plus both ends."""
    return math.floor(hi / resolution + 1e-9) - math.ceil(lo / resolution - 1e-9) + 3


def histogram(values: Iterable[float], edges: Sequence[float] = BIN_EDGES) -> list[int]:
    """Counts per bin ``[e_i, e_i+1)`` (the last bin closed); values are clamped to the
    outer edges first."""
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    for value in values:
        counts[min(last, max(0, bisect_right(edges, value) - 1))] += 1
    return counts
