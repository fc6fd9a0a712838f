"""Why a replayed branch ended early. Each is a hard failure of that branch."""

from __future__ import annotations

from .._errors import EnclaveError

__all__ = ["BranchError", "DivergenceError", "Unresolvable", "Unservable"]


class BranchError(EnclaveError):
    code = "branch_failed"


class DivergenceError(BranchError):
    """Before the departure point the agent asked for something the record does not hold
    at that position: the replay is not the recorded run (nondeterminism)."""

    code = "divergence"


class Unservable(BranchError):
    """After the departure point a call has no recording and no declared substitute."""

    code = "unservable"


class Unresolvable(BranchError):
    """The agent read content that was deliberately not retained (an honest hole)."""

    code = "unresolvable"
