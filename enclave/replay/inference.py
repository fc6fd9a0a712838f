"""Governed inference: after departure, a model call the record does not hold may be
asked of the operator's endpoint — by the supervisor, never the sandbox — under the
audit's grants (``InferenceGrant``: the boundary, the endpoint's name, the pinned model
identity, the parameters that may vary, the caps). ``InferenceBroker`` checks each ask
and asks; ``InferenceRecord`` seals the answers into the audit's own record, keyed to
the specimen and kept by the home's payload store beside its ciphertext (files or the
database; erased with it); ``endpoints_of`` reads the operator's endpoints from a
home's configuration; ``batch_allowance`` is a sample batch's share of the caps. See
``docs/inference.md``.
"""

from ._broker import MAX_ASK_BYTES, InferenceBroker, Tally
from ._endpoints import Endpoint, endpoints_of
from ._inference_grant import SAMPLING_PARAMETERS, InferenceCaps, InferenceGrant
from ._inference_record import InferenceRecord, record_key
from ._inference_stage import batch_allowance

__all__ = [
    "MAX_ASK_BYTES",
    "SAMPLING_PARAMETERS",
    "Endpoint",
    "InferenceBroker",
    "InferenceCaps",
    "InferenceGrant",
    "InferenceRecord",
    "Tally",
    "batch_allowance",
    "endpoints_of",
    "record_key",
]
