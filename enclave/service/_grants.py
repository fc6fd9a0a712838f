"""The grant route: the governance plane mints each replay grant (Vault mode).

``POST /internal/v1/grants`` with body ``{job_id, fencing_token}`` and a worker token as
bearer (``replay-enclave workers add``; workers are not analysts, so this route is
outside ``/api/v1`` and its analyst gate). The service holds the broker identity; a
worker holds none. In order — each refusal mints nothing and names only its code:

1. the bearer is an enabled worker's token, else 401 ``unauthenticated``;
2. the service is in Vault mode, else 404 ``grants_unavailable`` (local keys: every
   process uses its own broker, nothing to hand over);
3. the job is ``leased`` to this worker (``lease_owner`` is its name or
   ``<name>/...``) with exactly this fencing token and a lease that has not expired,
   else 409 ``lease_not_held`` (one code whatever the cause: no oracle);
4. its audit is ``QUEUED``, ``RUNNING`` or ``FINALIZING``, else 409 ``audit_not_running``
   (cancelled, failed and completed audits get nothing);
5. the audit has an admission binding whose HMAC verifies under its tenant's transit key
   (written at admission by this service, ``_grant_records.bind_admission``), naming the
   same tenant and specimen as the audit row, admitted less than ``MAX_AUDIT_AGE`` ago,
   else 403 ``not_admitted`` — a job or audit row a worker wrote itself has none;
6. the specimen's wrapped key is still there, else 409 ``unresolvable``;
7. TTL = min(whole seconds left on the lease, ``MAX_GRANT_TTL_SECONDS``); under 1 s: step 3's
   refusal;
8. one response-wrapped decrypt of exactly that specimen (``issue_grant``);
9. the lease is checked again; if it was lost meanwhile the wrapping token is revoked
   with itself and step 3's refusal is returned; else the token is handed over
   (``TransitGrant.hand_over``: this process can no longer redeem it, only revoke it);
   the grant is kept until its expiry so that cancelling the audit revokes it
   (``revoke_outstanding``; this process's grants only — with several service processes,
   those minted by another die at their TTL, at most the lease);
10. ``grant.issued`` (subject: the job) records worker, job, audit, specimen, accessor and
    expiry — never the token — and the answer carries the wrapping token.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from .._errors import DecryptionFailed, EnclaveError, GrantRefused
from ._auth import State
from ._errors import ERROR_RESPONSES, ServiceError
from ._job_checks import (
    INTERNAL_PREFIX,
    JobClaim,
    current_worker,
    lease_lost,
    leased,
    running_admitted_audit,
)

__all__ = ["INTERNAL_PREFIX", "MAX_GRANT_TTL_SECONDS", "revoke_outstanding", "router"]

MAX_GRANT_TTL_SECONDS = 900  # the broker policy's max_wrapping_ttl
log = logging.getLogger("enclave.service")
# grants handed over and not yet expired, per audit: revoked when the audit is cancelled
_outstanding: dict[str, list[Any]] = {}
_outstanding_lock = threading.Lock()

router = APIRouter(responses=ERROR_RESPONSES)


class GrantAnswer(BaseModel):
    wrapping_token: str
    accessor: str
    tenant_id: str
    specimen_id: str
    expires_at: str
    ttl_seconds: int


@router.post(
    "/grants",
    response_model=GrantAnswer,
    summary="Mint the grant of a claimed job (replay workers in Vault mode)",
)
def mint_grant(
    state: State, worker: Annotated[str, Depends(current_worker)], body: JobClaim
) -> dict[str, Any]:
    runtime, now = state.runtime, state.clock()
    # 2.
    if runtime.provider != "transit":
        raise ServiceError(404, "grants_unavailable", "grants are minted here in Vault mode only")
    # 3. - 5.
    lease, tenant, specimen = running_admitted_audit(runtime, worker, body, now)
    audit_id, lease_expires = lease.audit_id, lease.expires
    # 6.
    try:
        wrapped = runtime.payloads.wrapped_key(tenant, specimen)
    except DecryptionFailed:
        raise ServiceError(409, "unresolvable", "the specimen's key material is gone") from None
    # 7.
    ttl = min(int((lease_expires - now).total_seconds()), MAX_GRANT_TTL_SECONDS)
    if ttl < 1:
        raise lease_lost()
    # 8.
    try:
        grant = runtime.broker.issue_grant(
            tenant, specimen, wrapped, job_id=body.job_id, ttl_seconds=ttl, now=now
        )
    except GrantRefused:
        raise ServiceError(403, "grant_refused", "the key server refused the grant") from None
    # 9.
    try:
        leased(runtime, worker, body, now)
    except ServiceError:
        _revoke(grant)
        raise
    token = grant.hand_over()  # type: ignore[attr-defined]
    _keep(audit_id, grant, now)
    # 10.
    expires_at = grant.expires_at.isoformat().replace("+00:00", "Z")
    runtime.ledger.append(
        "grant.issued",
        body.job_id,
        {
            "job_id": body.job_id,
            "audit_id": audit_id,
            "specimen_id": specimen,
            "worker": worker,
            "provider": "transit",
            "accessor": grant.accessor,
            "expires_at": expires_at,
        },
    )
    log.info("grant issued job=%s worker=%s accessor=%s", body.job_id, worker, grant.accessor)
    return {
        "wrapping_token": token,
        "accessor": grant.accessor,
        "tenant_id": tenant,
        "specimen_id": specimen,
        "expires_at": expires_at,
        "ttl_seconds": ttl,
    }


def _revoke(grant: Any) -> None:
    """The wrapping token revokes itself (no broker right needed)."""
    try:
        grant.revoke()
    except EnclaveError:
        log.warning("a grant minted for a lost lease could not be revoked; it dies at its TTL")


def _keep(audit_id: str, grant: Any, now: datetime) -> None:
    with _outstanding_lock:
        for key in list(_outstanding):
            _outstanding[key] = [g for g in _outstanding[key] if g.expires_at > now]
            if not _outstanding[key]:
                del _outstanding[key]
        _outstanding.setdefault(audit_id, []).append(grant)


def revoke_outstanding(audit_id: str) -> int:
    """Revoke every grant this process handed over for ``audit_id`` (used ones are left
    as they are by the server). Returns how many were revoked or already dead."""
    with _outstanding_lock:
        grants = _outstanding.pop(audit_id, [])
    for grant in grants:
        _revoke(grant)
    return len(grants)
