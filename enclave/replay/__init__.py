"""Replay with one declared intervention, inside an isolated worker, to a certificate."""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

from ._errors import BranchError, DivergenceError, Unresolvable, Unservable
from ._model import LAYERS, RecordedStep, RunResult, Strategy, Tolerances, Trajectory
from .worker._engine import ReplayContext, replay_run

if TYPE_CHECKING:  # deferred below: the worker imports only the engine and its data
    from ._audit import record_request, run_audit
    from ._certificates import RuntimeLedgerLookup, issue_certificate, signing_key
    from ._compare import compare_layers, recorded_layers
    from ._disclosure import DisclosureBound, VocabularySize, disclosure_bound
    from ._interventions import AppliedIntervention, Intervention, apply_intervention, placebo_of
    from ._load import OpenedSpecimen, open_specimen
    from ._outcome import AuditOutcome, Preparation
    from ._predicate import publish_digests
    from ._reply import FAILURE_REASONS
    from ._reported import Auditability, Effect, Placebo, RecordedSeed
    from ._request import AuditRequest
    from ._results import BatchResult, SampleSummary
    from ._stages import WORKER_HANDLER, finalize_audit, prepare_audit, run_sample_batch
    from ._verdict import Verdict, auditability_of, decide
    from .worker._outgoing import summarize_seed

__getattr__ = deferred(
    __name__,
    globals(),
    {
        "record_request": "._audit",
        "run_audit": "._audit",
        "AuditOutcome": "._outcome",
        "BatchResult": "._results",
        "Preparation": "._outcome",
        "SampleSummary": "._results",
        "WORKER_HANDLER": "._stages",
        "finalize_audit": "._stages",
        "prepare_audit": "._stages",
        "run_sample_batch": "._stages",
        "RuntimeLedgerLookup": "._certificates",
        "issue_certificate": "._certificates",
        "signing_key": "._certificates",
        "compare_layers": "._compare",
        "DisclosureBound": "._disclosure",
        "VocabularySize": "._disclosure",
        "disclosure_bound": "._disclosure",
        "FAILURE_REASONS": "._reply",
        "Auditability": "._reported",
        "Effect": "._reported",
        "Placebo": "._reported",
        "RecordedSeed": "._reported",
        "recorded_layers": "._compare",
        "AppliedIntervention": "._interventions",
        "Intervention": "._interventions",
        "apply_intervention": "._interventions",
        "placebo_of": "._interventions",
        "OpenedSpecimen": "._load",
        "open_specimen": "._load",
        "publish_digests": "._predicate",
        "AuditRequest": "._request",
        "Verdict": "._verdict",
        "auditability_of": "._verdict",
        "decide": "._verdict",
        "summarize_seed": ".worker._outgoing",
    },
)

__all__ = [
    "FAILURE_REASONS",
    "LAYERS",
    "WORKER_HANDLER",
    "AppliedIntervention",
    "AuditOutcome",
    "Auditability",
    "Effect",
    "Placebo",
    "RecordedSeed",
    "AuditRequest",
    "BatchResult",
    "Preparation",
    "SampleSummary",
    "BranchError",
    "DisclosureBound",
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
    "VocabularySize",
    "apply_intervention",
    "auditability_of",
    "compare_layers",
    "decide",
    "disclosure_bound",
    "finalize_audit",
    "prepare_audit",
    "record_request",
    "run_sample_batch",
    "summarize_seed",
    "issue_certificate",
    "open_specimen",
    "placebo_of",
    "publish_digests",
    "recorded_layers",
    "replay_run",
    "run_audit",
    "signing_key",
]
