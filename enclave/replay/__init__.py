"""Replay with one declared intervention, inside an isolated worker, to a certificate."""

from ._audit import record_request, run_audit
from ._results import AuditOutcome, BatchResult, Preparation, SampleSummary
from ._stages import WORKER_HANDLER, finalize_audit, prepare_audit, run_sample_batch
from ._certificates import RuntimeLedgerLookup, issue_certificate, signing_key
from ._compare import compare_layers, recorded_layers
from ._engine import ReplayContext, replay_run
from ._errors import BranchError, DivergenceError, Unresolvable, Unservable
from ._interventions import AppliedIntervention, Intervention, apply_intervention, placebo_of
from ._load import OpenedSpecimen, open_specimen
from ._model import LAYERS, RecordedStep, RunResult, Strategy, Tolerances, Trajectory
from ._request import AuditRequest
from ._verdict import Verdict, auditability_of, decide, summarize_seed

__all__ = [
    "LAYERS",
    "WORKER_HANDLER",
    "AppliedIntervention",
    "AuditOutcome",
    "AuditRequest",
    "BatchResult",
    "Preparation",
    "SampleSummary",
    "BranchError",
    "DivergenceError",
    "Intervention",
    "OpenedSpecimen",
    "RecordedStep",
    "ReplayContext",
    "RunResult",
    "RuntimeLedgerLookup",
    "Strategy",
    "Tolerances",
    "Trajectory",
    "Unresolvable",
    "Unservable",
    "Verdict",
    "apply_intervention",
    "auditability_of",
    "compare_layers",
    "decide",
    "finalize_audit",
    "prepare_audit",
    "record_request",
    "run_sample_batch",
    "summarize_seed",
    "issue_certificate",
    "open_specimen",
    "placebo_of",
    "recorded_layers",
    "replay_run",
    "run_audit",
    "signing_key",
]
