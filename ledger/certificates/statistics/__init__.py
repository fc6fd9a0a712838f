"""Statistics for certificates: exact binomial and Student-t intervals, minimum
detectable effects and the effect label's rule (pure Python)."""

from ._derived import derived_delta_mde, derived_equivalence
from ._grid import on_grid
from ._intervals import clopper_pearson, mean_interval, regularized_beta, student_t_quantile
from ._label import EQUIVALENT, INCONCLUSIVE, INFLUENTIAL, MIN_FLIPS, effect_label
from ._power import DEFAULT_POWER, delta_mde, flip_mde

__all__ = [
    "DEFAULT_POWER",
    "EQUIVALENT",
    "INCONCLUSIVE",
    "INFLUENTIAL",
    "MIN_FLIPS",
    "clopper_pearson",
    "delta_mde",
    "derived_delta_mde",
    "derived_equivalence",
    "effect_label",
    "flip_mde",
    "mean_interval",
    "on_grid",
    "regularized_beta",
    "student_t_quantile",
]
