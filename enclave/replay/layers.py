"""Comparing two runs layer by layer: bounded values only, never the values themselves.

For whoever reduces runs to what may leave the enclave (the worker's summaries, the
verdict, tests of both): the ``LAYERS`` a run is compared on, :func:`compare_layers`
for two runs and :func:`recorded_layers` for a specimen's own record.
"""

from ._compare import compare_layers, recorded_layers
from ._model import LAYERS

__all__ = ["LAYERS", "compare_layers", "recorded_layers"]
