"""Checks every internal route makes before it hands a worker anything for a job.

A worker authenticates with its worker token (``replay-enclave workers add``) and names a
job it has claimed with its fencing token. In order, each refusal naming only its code:

3. the job is ``leased`` to this worker (``lease_owner`` is its name or ``<name>/...``)
   with exactly this fencing token and a lease that has not expired, else 409
   ``lease_not_held`` (one code whatever the cause: no oracle);
4. its audit is ``QUEUED``, ``RUNNING`` or ``FINALIZING``, else 409 ``audit_not_running``;
5. the audit has an admission binding whose HMAC verifies under its tenant's transit key
   (``_grant_records.bind_admission``), naming the same tenant and specimen as the audit
   row, admitted less than ``MAX_AUDIT_AGE`` ago, else 403 ``not_admitted``.

(Steps 1 and 2 — the worker token, Vault mode — come first in each route.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from ledger import ACTIVE_AUDIT_STATES

from .._runtime import Runtime
from ..jobs import audit_place, job_lease
from ._auth import State
from ._errors import ServiceError
from ._grant_records import admission_of, authenticate_worker

__all__ = [
    "INTERNAL_PREFIX",
    "MAX_AUDIT_AGE",
    "JobClaim",
    "Lease",
    "current_worker",
    "lease_lost",
    "leased",
    "running_admitted_audit",
]

INTERNAL_PREFIX = "/internal/v1"
MAX_AUDIT_AGE = timedelta(hours=24)
_bearer = HTTPBearer(auto_error=False, description="A worker token (`replay-enclave workers add`).")


class JobClaim(BaseModel):
    """A claimed job, named by the worker that holds its lease."""

    model_config = ConfigDict(extra="forbid", strict=True)

    job_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
    fencing_token: int = Field(ge=0, le=2**53)


def current_worker(
    state: State, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> str:
    worker = None
    if credentials is not None and credentials.scheme.lower() == "bearer":
        worker = authenticate_worker(state.runtime, credentials.credentials)
    if worker is None:
        raise ServiceError(
            401,
            "unauthenticated",
            "a valid worker token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return worker


def lease_lost() -> ServiceError:
    return ServiceError(409, "lease_not_held", "the job's lease is not held by this worker")


@dataclass(frozen=True)
class Lease:
    audit_id: str
    kind: str  # audit | replay | finalize
    expires: datetime


def leased(runtime: Runtime, worker: str, body: JobClaim, now: datetime) -> Lease:
    """Step 3: the job's audit, kind and lease expiry, if this worker holds it now."""
    found = job_lease(runtime.ledger.engine, body.job_id)
    if found is None:
        raise lease_lost()
    owner = found.owner
    mine = owner is not None and (owner == worker or owner.startswith(worker + "/"))
    if found.status != "leased" or found.fencing_token != body.fencing_token or not mine:
        raise lease_lost()
    if found.expires is None or found.expires <= now:
        raise lease_lost()
    return Lease(found.audit_id, found.kind, found.expires)


def running_admitted_audit(
    runtime: Runtime, worker: str, body: JobClaim, now: datetime
) -> tuple[Lease, str, str]:
    """Steps 3-5: the lease this worker holds, and its admitted running audit's tenant
    and specimen."""
    lease = leased(runtime, worker, body, now)
    tenant, specimen = _audit(runtime, lease.audit_id)
    _admitted(runtime, lease.audit_id, tenant, specimen, now)
    return lease, tenant, specimen


def _audit(runtime: Runtime, audit_id: str) -> tuple[str, str]:
    """Step 4: the running audit's tenant and specimen."""
    found = audit_place(runtime.ledger.engine, audit_id)
    if found is None or found.status not in ACTIVE_AUDIT_STATES:
        raise ServiceError(409, "audit_not_running", "the job's audit is not running")
    return found.tenant_id, found.specimen_id


def _admitted(runtime: Runtime, audit_id: str, tenant: str, specimen: str, now: datetime) -> None:
    """Step 5: a binding this service made at admission, for this tenant and specimen."""
    found = admission_of(runtime, audit_id)
    refused = ServiceError(403, "not_admitted", "the job's audit was not admitted")
    if found is None or (found.tenant_id, found.specimen_id) != (tenant, specimen):
        raise refused
    admitted_at = datetime.fromisoformat(found.admitted_at.replace("Z", "+00:00"))
    if not admitted_at <= now < admitted_at + MAX_AUDIT_AGE:
        raise refused
