"""The effect of an intervention over N paired samples, and the label it supports.

1. Outcome kind: every sample has a score delta (``numeric``) or none has
   (``categorical``: compared by decision equality and flips alone); a mix is not
   comparable and raises ``MixedOutcomes``.
2. Paired deltas: mean and Student-t interval at ``CONFIDENCE``, widened outward to the
   declared resolution, so the reported ends hold the exact ones; the TOST equivalence
   interval (two one-sided tests at ``TOST_ALPHA``: the ``1 - 2·alpha`` interval) is the
   one the reported interval implies (``statistics.derived_equivalence``), which holds
   the exact one, so a verifier recomputes it rather than reading it.
3. Flips: the count, the Clopper-Pearson interval at ``CONFIDENCE`` and the one-sided
   upper bound at ``1 - TOST_ALPHA`` that the equivalence test uses.
4. The label is ``analysis.effect_label`` applied to exactly the reported values, so a
   verifier re-derives it from the certificate.
5. Minimum detectable effects for this N: the mean delta the influence rule would detect
   with ``DEFAULT_POWER`` at the spread the reported interval implies (rounded up:
   ``statistics.derived_delta_mde``), and the flip rate at which
   the flip rule (at least ``MIN_FLIPS`` flips) would fire with that power.
6. Per layer, how many samples changed between baseline and intervened arms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ledger.certificates.statistics import (
    DEFAULT_POWER,
    MIN_FLIPS,
    clopper_pearson,
    derived_delta_mde,
    derived_equivalence,
    effect_label,
    flip_mde,
    mean_interval,
)

from ._model import LAYERS
from ._quantize import BIN_EDGES, histogram, quantize, quantize_interval
from ._reported import Effect, Equivalence, Histogram, MinimumDetectable
from ._results import SampleSummary

__all__ = ["CONFIDENCE", "DEFAULT_FLIP_TOLERANCE", "TOST_ALPHA", "MixedOutcomes", "effect_of"]

CONFIDENCE = 0.95
TOST_ALPHA = 0.05
# a decision flip rate below 5% counts as no influence on the decision (declarable)
DEFAULT_FLIP_TOLERANCE = 0.05


class MixedOutcomes(ValueError):
    """Some samples have a score delta and some do not: nothing comparable."""


def _deltas(samples: Sequence[SampleSummary]) -> list[float] | None:
    deltas = [s.delta for s in samples]
    if all(d is None for d in deltas):
        return None
    if any(d is None for d in deltas):
        raise MixedOutcomes("numeric and categorical samples do not mix")
    return [float(d) for d in deltas if d is not None]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Numeric:
    mean_delta: float
    delta_interval: tuple[float, float]
    equivalence_interval: tuple[float, float]
    histogram: Histogram
    mde_delta: float


def _numeric(deltas: list[float], *, tolerance: float, resolution: float) -> _Numeric:
    n = len(deltas)
    mean, lo, hi = mean_interval(deltas, CONFIDENCE)
    # identical deltas: keep the last ulp consistent
    interval = quantize_interval(min(lo, mean), max(hi, mean), resolution)
    reported = quantize(mean, resolution)
    return _Numeric(
        mean_delta=reported,
        delta_interval=interval,
        equivalence_interval=derived_equivalence(
            reported,
            interval,
            n=n,
            resolution=resolution,
            confidence=CONFIDENCE,
            alpha=TOST_ALPHA,
        ),
        histogram=Histogram(edges=tuple(BIN_EDGES), counts=tuple(histogram(deltas))),
        mde_delta=derived_delta_mde(
            reported,
            interval,
            n=n,
            resolution=resolution,
            tolerance=tolerance,
            confidence=CONFIDENCE,
            power=DEFAULT_POWER,
        ),
    )


def effect_of(
    samples: Sequence[SampleSummary],
    *,
    tolerance: float,
    flip_tolerance: float,
    resolution: float,
) -> tuple[str, Effect]:
    """``(label, effect)`` for completed samples (see the module docstring)."""
    n = len(samples)
    deltas = _deltas(samples)  # 1.
    numeric = (
        None if deltas is None else _numeric(deltas, tolerance=tolerance, resolution=resolution)
    )  # 2.
    flips = sum(1 for s in samples if s.flip)  # 3.
    flip_lo, flip_hi = clopper_pearson(flips, n, CONFIDENCE)
    flip_upper = clopper_pearson(flips, n, 1 - 2 * TOST_ALPHA)[1]
    label = effect_label(  # 4.
        delta_interval=None if numeric is None else numeric.delta_interval,
        equivalence_interval=None if numeric is None else numeric.equivalence_interval,
        score_tolerance=tolerance,
        flips=flips,
        flip_upper=flip_upper,
        flip_tolerance=flip_tolerance,
    )
    effect = Effect(
        outcome="categorical" if numeric is None else "numeric",
        mean_delta=None if numeric is None else numeric.mean_delta,
        delta_interval=None if numeric is None else numeric.delta_interval,
        flips=flips,
        flip_rate=flips / n,
        flip_interval=(flip_lo, flip_hi),
        baseline_rate=sum(1 for s in samples if s.baseline_hit) / n,
        intervened_rate=sum(1 for s in samples if s.intervened_hit) / n,
        histogram=None if numeric is None else numeric.histogram,
        confidence=CONFIDENCE,
        score_tolerance=tolerance,
        flip_tolerance=flip_tolerance,
        equivalence=Equivalence(
            alpha=TOST_ALPHA,
            delta_interval=None if numeric is None else numeric.equivalence_interval,
            flip_upper=flip_upper,
        ),
        mde=MinimumDetectable(  # 5.
            power=DEFAULT_POWER,
            delta=None if numeric is None else numeric.mde_delta,
            flip_rate=flip_mde(n, min_flips=MIN_FLIPS, power=DEFAULT_POWER),
        ),
        layer_changes={  # 6.
            layer: sum(1 for s in samples if layer in s.changed_layers) for layer in LAYERS
        },
    )
    return label, effect
