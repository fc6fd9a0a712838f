"""Statistics for certificates: exact binomial and Student-t intervals (pure Python)."""

from ._intervals import clopper_pearson, mean_interval, regularized_beta, student_t_quantile

__all__ = ["clopper_pearson", "mean_interval", "regularized_beta", "student_t_quantile"]
