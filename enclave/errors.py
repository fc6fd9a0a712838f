"""Every error class the enclave raises on purpose, by who is at fault: for code that
catches a particular failure (a caller, a scheduler, a test) and for a reader who wants
the whole vocabulary in one place. The root and its five branches are also on the
``enclave`` front; a leaf class defined in a subpackage is listed here from that
subpackage's front. Each class carries its exit code and HTTP status
(``ledger.ErrorOutcome``). Names are imported on first use.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._errors import AgentFailed as AgentFailed
    from ._errors import BadInput as BadInput
    from ._errors import DecryptionFailed as DecryptionFailed
    from ._errors import EnclaveError as EnclaveError
    from ._errors import GrantRefused as GrantRefused
    from ._errors import InfrastructureError as InfrastructureError
    from ._errors import IntegrityFailure as IntegrityFailure
    from ._errors import Refused as Refused
    from ._retention import SweepStopped as SweepStopped
    from .capture import AgentCrashed as AgentCrashed
    from .capture import SpecError as SpecError
    from .governance import BudgetExhausted as BudgetExhausted
    from .governance import InvalidPurpose as InvalidPurpose
    from .governance import NoEffect as NoEffect
    from .keys import GrantServiceUnavailable as GrantServiceUnavailable
    from .keys import KeyServerUnavailable as KeyServerUnavailable
    from .replay import BranchError as BranchError
    from .replay import DivergenceError as DivergenceError
    from .replay import Unresolvable as Unresolvable
    from .replay import Unservable as Unservable
    from .replay.reply import ReplyInvalid as ReplyInvalid
    from .replay.reply import ReplyRefused as ReplyRefused
    from .replay.reply import ValueOutOfRange as ValueOutOfRange
    from .sandbox import Contaminated as Contaminated
    from .sandbox import SandboxUnavailable as SandboxUnavailable
    from .sandbox import WorkerClosed as WorkerClosed
    from .store import PayloadsMoving as PayloadsMoving

_FRONT = {
    # the root (a fault with no branch: only agent code raises it) and its branches
    "EnclaveError": "enclave._errors",
    "BadInput": "enclave._errors",
    "Refused": "enclave._errors",
    "InfrastructureError": "enclave._errors",
    "IntegrityFailure": "enclave._errors",
    "AgentFailed": "enclave._errors",
    # bad input
    "SpecError": "enclave.capture",
    "InvalidPurpose": "enclave.governance",
    "NoEffect": "enclave.governance",
    # refusals
    "GrantRefused": "enclave._errors",
    "BudgetExhausted": "enclave.governance",
    # infrastructure
    "SweepStopped": "enclave._retention",
    "SandboxUnavailable": "enclave.sandbox",
    "GrantServiceUnavailable": "enclave.keys",
    "KeyServerUnavailable": "enclave.keys",
    "PayloadsMoving": "enclave.store",
    # integrity
    "DecryptionFailed": "enclave._errors",
    # the agent's own failure
    "AgentCrashed": "enclave.capture",
    "BranchError": "enclave.replay",
    "DivergenceError": "enclave.replay",
    "Unservable": "enclave.replay",
    "Unresolvable": "enclave.replay",
    "Contaminated": "enclave.sandbox",
    "WorkerClosed": "enclave.sandbox",
    "ReplyRefused": "enclave.replay.reply",
    "ReplyInvalid": "enclave.replay.reply",
    "ValueOutOfRange": "enclave.replay.reply",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
