"""Durable audits: a job queue with leases, heartbeats, retries and fenced commits.

An audit submitted here is recorded ``QUEUED`` and returns at once; workers on any
host sharing the database claim its jobs (prepare, replay batches, finalize) under
leases and commit each result only with the job's current fencing token. Exactly one
conclusion (certificate or failure) is recorded per audit, however often a job is
re-delivered. The tables hold metadata, stage results and certificates only.
"""

from ledger import Conflict, NotFound
from ledger.tables import AUDIT_STATUSES, JOB_KINDS, JOB_STATUSES, JOB_TABLES, AuditRow, JobRow

from ._conclusions import CONCLUSION_KINDS
from ._execute import StageOptions, execute
from ._fencing import FencedLedger
from ._lifecycle import (
    CANCEL_REASONS,
    AuditPage,
    ListedAudit,
    audit_page,
    audit_status,
    cancel_audit,
    certificate,
    list_audits,
    open_audits,
    submit_audit,
)
from ._lookups import AuditPlace, JobLease, audit_place, job_lease
from ._model import AuditStatus, ClaimedJob, FailResult
from ._queue import claim, complete, enqueue, fail, heartbeat, job_id_for, reap
from ._worker import WorkerStats, run_worker

__all__ = [
    "AUDIT_STATUSES",
    "CANCEL_REASONS",
    "CONCLUSION_KINDS",
    "JOB_KINDS",
    "JOB_STATUSES",
    "JOB_TABLES",
    "AuditPage",
    "AuditPlace",
    "AuditRow",
    "AuditStatus",
    "ClaimedJob",
    "Conflict",
    "FailResult",
    "FencedLedger",
    "JobLease",
    "JobRow",
    "ListedAudit",
    "NotFound",
    "StageOptions",
    "WorkerStats",
    "audit_page",
    "audit_place",
    "audit_status",
    "cancel_audit",
    "certificate",
    "claim",
    "complete",
    "enqueue",
    "execute",
    "fail",
    "heartbeat",
    "job_lease",
    "job_id_for",
    "list_audits",
    "open_audits",
    "reap",
    "run_worker",
    "submit_audit",
]
