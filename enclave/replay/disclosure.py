"""How much a certificate can say: the disclosure bound and the grid numbers leave on.

For governance, which states an audit's bound before it runs, and for checks of what
leaves the enclave: every number an agent can influence is clamped and rounded to a
declared resolution (``quantize``, ``resolution_for``) or counted into fixed bins
(``histogram``, ``BIN_EDGES``), so :func:`disclosure_bound` can count the bits a
certificate's agent-influenced content can carry for a specimen's
:class:`VocabularySize`.
"""

from ._disclosure import DisclosureBound, VocabularySize, disclosure_bound
from ._quantize import (
    BIN_EDGES,
    MIN_RESOLUTION,
    histogram,
    quantize,
    quantize_interval,
    resolution_for,
)

__all__ = [
    "BIN_EDGES",
    "MIN_RESOLUTION",
    "DisclosureBound",
    "VocabularySize",
    "disclosure_bound",
    "histogram",
    "quantize",
    "quantize_interval",
    "resolution_for",
]
