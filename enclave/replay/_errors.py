"""Why a replayed branch ended early, and why a worker's reply was refused.

Every failure reason that can leave an audit comes from a closed set:
``RUN_FAILURES`` for what a replayed run may report (an agent's own exception is
``agent_error``, whatever its class, code or text), and ``ReplyRefused`` codes for a
reply the supervisor would not accept.
"""

from __future__ import annotations

from .._errors import AgentFailed, InfrastructureError, IntegrityFailure

__all__ = [
    "AGENT_ERROR",
    "AmbientInputMissing",
    "RUN_FAILURES",
    "BranchError",
    "DivergenceError",
    "InferenceUnavailable",
    "ModelDrift",
    "ReplyInvalid",
    "ReplyRefused",
    "Unresolvable",
    "Unservable",
    "ValueOutOfRange",
]

AGENT_ERROR = "agent_error"
VALUE_OUT_OF_RANGE = "value_out_of_range"


class BranchError(AgentFailed):
    code = "branch_failed"


class DivergenceError(BranchError):
    """Before the departure point the agent asked for something the record does not hold
    at that position: the replay is not the recorded run (nondeterminism)."""

    code = "divergence"


class Unservable(BranchError):
    """After the departure point a call has no recording and no declared substitute."""

    code = "unservable"


class AmbientInputMissing(Unservable):
    """The run read an environment variable or a data file outside ``ctx`` that the
    record does not hold (the recorded run never read it): the world it would have met
    is unknown, so the branch abstains. Which kind it was is the ``served`` mark of the
    closed name ``ambient:env`` / ``ambient:environ`` / ``ambient:credential`` /
    ``ambient:file``."""

    code = "ambient_input"


class Unresolvable(BranchError):
    """The agent read content that was deliberately not retained (an honest hole)."""

    code = "unresolvable"


# What one replayed run may report as its failure; anything else is ``agent_error``.
RUN_FAILURES: frozenset[str] = frozenset(
    {
        BranchError.code,
        DivergenceError.code,
        Unservable.code,
        AmbientInputMissing.code,
        Unresolvable.code,
        AGENT_ERROR,
        VALUE_OUT_OF_RANGE,
    }
)


class ReplyRefused(AgentFailed):
    """The supervisor refused what the worker sent back. The text is fixed: nothing of
    the reply is ever quoted."""

    code = "worker_reply_invalid"

    def __init__(self) -> None:
        super().__init__("the replay worker's reply was refused")


class ReplyInvalid(ReplyRefused):
    """Unknown keys, wrong types, names outside the specimen's vocabulary, oversize lists."""

    code = "worker_reply_invalid"


class ValueOutOfRange(ReplyRefused):
    """A number the enclave cannot carry exactly (an integer beyond 2**53 - 1, NaN, ±inf)."""

    code = VALUE_OUT_OF_RANGE


class ModelDrift(IntegrityFailure):
    """The endpoint answered with a model identity other than the pinned one: the audit
    fails with no certificate (the provider is not serving what was recorded)."""

    code = "model_drift"


class InferenceUnavailable(InfrastructureError):
    """The operator's endpoint could not be reached or did not answer as an API answers
    (a transport failure, an error status, no JSON): the audit fails, safe to retry."""

    code = "inference_unavailable"
