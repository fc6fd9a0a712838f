"""Durable audits: a job queue with leases, heartbeats, retries and fenced commits.

An audit submitted here is recorded ``QUEUED`` and returns at once; workers on any
host sharing the database claim its jobs (prepare, replay batches, finalize) under
leases and commit each result only with the job's current fencing token. Exactly one
conclusion (certificate or failure) is recorded per audit, however often a job is
re-delivered. The tables hold metadata, stage results and certificates only.

A job that fails is tried again only if its error says so (``retryable``, see
``ledger.ErrorOutcome``); any other failure fails its audit closed.

Every name is imported on first use: the service and the command line import this
package, and pay for the queue and the stages only when they use them.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ledger import Conflict as Conflict
    from ledger import NotFound as NotFound
    from ledger.tables import AUDIT_STATUSES as AUDIT_STATUSES
    from ledger.tables import JOB_KINDS as JOB_KINDS
    from ledger.tables import JOB_STATUSES as JOB_STATUSES
    from ledger.tables import JOB_TABLES as JOB_TABLES
    from ledger.tables import AuditRow as AuditRow
    from ledger.tables import JobRow as JobRow

    from ._conclusions import CONCLUSION_KINDS as CONCLUSION_KINDS
    from ._execute import StageOptions as StageOptions
    from ._execute import execute as execute
    from ._execute import issue_time as issue_time
    from ._execute import lineage as lineage
    from ._fencing import FencedLedger as FencedLedger
    from ._findings import findings as findings
    from ._lifecycle import CANCEL_REASONS as CANCEL_REASONS
    from ._lifecycle import AuditPage as AuditPage
    from ._lifecycle import ListedAudit as ListedAudit
    from ._lifecycle import audit_page as audit_page
    from ._lifecycle import audit_status as audit_status
    from ._lifecycle import cancel_audit as cancel_audit
    from ._lifecycle import certificate as certificate
    from ._lifecycle import list_audits as list_audits
    from ._lifecycle import open_audits as open_audits
    from ._lifecycle import submit_audit as submit_audit
    from ._lookups import AuditPlace as AuditPlace
    from ._lookups import JobLease as JobLease
    from ._lookups import audit_place as audit_place
    from ._lookups import job_lease as job_lease
    from ._model import AuditStatus as AuditStatus
    from ._model import ClaimedJob as ClaimedJob
    from ._model import FailResult as FailResult
    from ._model import parse_time as parse_time
    from ._model import stamp as stamp
    from ._queue import claim as claim
    from ._queue import complete as complete
    from ._queue import enqueue as enqueue
    from ._queue import fail as fail
    from ._queue import fenced as fenced
    from ._queue import heartbeat as heartbeat
    from ._queue import job_id_for as job_id_for
    from ._queue import reap as reap
    from ._queue import write_tx as write_tx
    from ._worker import WorkerStats as WorkerStats
    from ._worker import prewarm as prewarm
    from ._worker import run_worker as run_worker

_FRONT = {
    "Conflict": "ledger",
    "NotFound": "ledger",
    "AUDIT_STATUSES": "ledger.tables",
    "JOB_KINDS": "ledger.tables",
    "JOB_STATUSES": "ledger.tables",
    "JOB_TABLES": "ledger.tables",
    "AuditRow": "ledger.tables",
    "JobRow": "ledger.tables",
    "CONCLUSION_KINDS": "._conclusions",
    "StageOptions": "._execute",
    "execute": "._execute",
    "issue_time": "._execute",
    "findings": "._findings",
    "lineage": "._execute",
    "FencedLedger": "._fencing",
    "CANCEL_REASONS": "._lifecycle",
    "AuditPage": "._lifecycle",
    "ListedAudit": "._lifecycle",
    "audit_page": "._lifecycle",
    "audit_status": "._lifecycle",
    "cancel_audit": "._lifecycle",
    "certificate": "._lifecycle",
    "list_audits": "._lifecycle",
    "open_audits": "._lifecycle",
    "submit_audit": "._lifecycle",
    "AuditPlace": "._lookups",
    "JobLease": "._lookups",
    "audit_place": "._lookups",
    "job_lease": "._lookups",
    "AuditStatus": "._model",
    "ClaimedJob": "._model",
    "FailResult": "._model",
    "parse_time": "._model",
    "stamp": "._model",
    "claim": "._queue",
    "complete": "._queue",
    "enqueue": "._queue",
    "fail": "._queue",
    "fenced": "._queue",
    "heartbeat": "._queue",
    "job_id_for": "._queue",
    "reap": "._queue",
    "write_tx": "._queue",
    "WorkerStats": "._worker",
    "prewarm": "._worker",
    "run_worker": "._worker",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
