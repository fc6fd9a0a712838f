"""Replay with one declared intervention, inside an isolated worker, to a certificate.

The front is what a user calls: build an :class:`AuditRequest` (one
:class:`Intervention`, by :class:`Strategy`; a code revision names a
:class:`CandidateCode`), run it with :func:`run_audit` and read the
:class:`AuditOutcome`; a replayed branch that ends early says why with one of the
errors below. Everything else has a named public module, each for its own readers:
``stages`` (the durable job workers), ``runs`` (one replayed run by hand),
``verdict``, ``reply`` (the supervisor's check of a worker's reply), ``layers``,
``disclosure``, ``certificates``, ``inference`` (governed inference: an audit's
:class:`InferenceGrant` lets the supervisor ask a model what the record does not hold),
``requests`` and ``targets`` (front ends' checks of
what is asked for). Every name is imported on first use, so a replay worker importing
this package loads none of the supervisor's side.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._audit import run_audit as run_audit
    from ._candidate import CandidateCode as CandidateCode
    from ._candidate import CandidateDistribution as CandidateDistribution
    from ._errors import BranchError as BranchError
    from ._errors import DivergenceError as DivergenceError
    from ._errors import Unresolvable as Unresolvable
    from ._errors import Unservable as Unservable
    from ._inference_grant import InferenceCaps as InferenceCaps
    from ._inference_grant import InferenceGrant as InferenceGrant
    from ._intervention import Intervention as Intervention
    from ._model import Strategy as Strategy
    from ._model import Tolerances as Tolerances
    from ._outcome import AuditOutcome as AuditOutcome
    from ._request import AuditRequest as AuditRequest

_FRONT = {
    "AuditOutcome": "._outcome",
    "AuditRequest": "._request",
    "BranchError": "._errors",
    "CandidateCode": "._candidate",
    "CandidateDistribution": "._candidate",
    "DivergenceError": "._errors",
    "InferenceCaps": "._inference_grant",
    "InferenceGrant": "._inference_grant",
    "Intervention": "._intervention",
    "Strategy": "._model",
    "Tolerances": "._model",
    "Unresolvable": "._errors",
    "Unservable": "._errors",
    "run_audit": "._audit",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
