"""The effect label as a function of what a certificate reports, so that issuing and
verifying apply one rule:

1. ``influential`` — the paired-delta interval lies wholly beyond the score tolerance,
   or the decision flipped on at least ``MIN_FLIPS`` seeds (a conclusion never rests on
   a single flip).
2. ``equivalent`` — the equivalence interval (TOST) lies inside the tolerance (or the
   outcome has no score), no decision flipped, and the flip rate's one-sided upper bound
   is below the flip tolerance (so N was large enough to bound it).
3. ``inconclusive`` — neither.

Interval ends at ±1 are clamped values: an interval touching them is not "inside".
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EQUIVALENT", "INCONCLUSIVE", "INFLUENTIAL", "MIN_FLIPS", "effect_label"]

INFLUENTIAL = "influential"
EQUIVALENT = "equivalent"
INCONCLUSIVE = "inconclusive"
MIN_FLIPS = 2


def effect_label(
    *,
    delta_interval: Sequence[float] | None,
    equivalence_interval: Sequence[float] | None,
    score_tolerance: float,
    flips: int,
    flip_upper: float,
    flip_tolerance: float,
) -> str:
    """``delta_interval`` is the two-sided interval, ``equivalence_interval`` the TOST
    one; both ``None`` for a categorical outcome (decided on flips alone)."""
    if (delta_interval is None) != (equivalence_interval is None):
        raise ValueError("both intervals or neither")
    if delta_interval is not None:
        lo, hi = delta_interval
        if lo > score_tolerance or hi < -score_tolerance:
            return INFLUENTIAL
    if flips >= MIN_FLIPS:
        return INFLUENTIAL
    inside = True
    if equivalence_interval is not None:
        lo, hi = equivalence_interval
        inside = -score_tolerance <= lo and hi <= score_tolerance and -1 < lo and hi < 1
    if inside and flips == 0 and flip_upper < flip_tolerance:
        return EQUIVALENT
    return INCONCLUSIVE
