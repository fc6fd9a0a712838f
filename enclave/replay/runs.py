"""One replayed run by hand, outside an audit's stages.

For code that looks at a specimen without auditing it (governance's preview of an
intervention) and for tests of the engine: open a sealed specimen inside the enclave
(its own single-use grant), apply a declared intervention (and prove it changed only
what it declares) or its placebo, and replay the trajectory once with
``replay_run``, never live. An audit does all of this in isolated workers:
``enclave.replay.run_audit``.
"""

from ._interventions import AppliedIntervention, apply_intervention, placebo_of
from ._load import OpenedSpecimen, open_specimen
from ._model import RecordedStep, RunResult, Trajectory
from .worker import ReplayContext, replay_run

__all__ = [
    "AppliedIntervention",
    "OpenedSpecimen",
    "RecordedStep",
    "ReplayContext",
    "RunResult",
    "Trajectory",
    "apply_intervention",
    "open_specimen",
    "placebo_of",
    "replay_run",
]
