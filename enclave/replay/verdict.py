"""An audit's verdict: from replayed runs to auditability, placebo, effect and label.

For readers of an outcome's ``verdict`` and for checks of how an audit decides
(numbered like "How an audit decides" in docs/audits.md): :func:`decide` and
:func:`auditability_of`, the :class:`Verdict` they produce and the labels it carries
besides the effect labels of ``ledger.certificates.statistics``.
"""

from ._effect import DEFAULT_FLIP_TOLERANCE
from ._reported import Auditability, Effect, Placebo, RecordedSeed
from ._verdict import (
    ADMISSIBLE,
    BASELINE_NOT_REPRODUCED,
    EFFECT_LABELS,
    FAILED,
    NOT_ASSESSED,
    OBSERVABLE_ONLY,
    Verdict,
    auditability_of,
    decide,
)

__all__ = [
    "ADMISSIBLE",
    "Auditability",
    "Effect",
    "Placebo",
    "RecordedSeed",
    "BASELINE_NOT_REPRODUCED",
    "DEFAULT_FLIP_TOLERANCE",
    "EFFECT_LABELS",
    "FAILED",
    "NOT_ASSESSED",
    "OBSERVABLE_ONLY",
    "Verdict",
    "auditability_of",
    "decide",
]
