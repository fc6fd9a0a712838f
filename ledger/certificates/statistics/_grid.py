"""The grid a certificate's quantised figures sit on: multiples of a resolution, written
to four significant digits past the resolution's own, so the issuer's figures and the
ones a verifier re-derives are the same floats."""

from __future__ import annotations

import math

__all__ = ["on_grid"]


def on_grid(steps: int, resolution: float, lo: float = -math.inf, hi: float = math.inf) -> float:
    """``steps`` multiples of ``resolution``, rounded as the grid writes them and clamped
    to ``[lo, hi]`` (never a negative zero)."""
    digits = max(0, 4 - math.floor(math.log10(resolution)))
    return min(hi, max(lo, round(steps * resolution, digits))) + 0.0
