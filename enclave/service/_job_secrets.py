"""What else a worker on another host gets for a claimed job: its tenant's digest key
and, for a finalizer, the certificate's signature (Vault mode).

A worker shares nothing with the service but the database and Vault: no keyring, no
signing key. With its worker token and the job it holds — after the checks of
``_job_checks`` (lease and fencing token, running audit, admission binding) — it asks:

* ``POST /internal/v1/digest-keys`` ``{job_id, fencing_token}``: the digest secret of
  the job's tenant (``docs/digests.md``), which keys the digests the job computes and
  publishes. One answer per request, ``Cache-Control: no-store``; recorded as
  ``digest_key.issued`` (worker, job, audit, tenant — never the key). It travels in the
  answer's body: serve the internal routes over TLS (``serve --ssl-certfile``) or a
  private network.
* ``POST /internal/v1/signatures`` ``{job_id, fencing_token, specimen_id,
  manifest_digest, predicate}``: only for a ``finalize`` job; the specimen must be the
  audit's and the manifest digest its sealed one, else 409 ``not_this_audit``. The
  service names its own key as the issuer and signs only a statement that passes
  ``sign_statement``'s checks (schema, rules, binding), else 422 ``predicate_invalid``
  naming the first problem's location. The worker appends ``certificate.issued``.

Both: the worker token first (401), then Vault mode (404 ``grants_unavailable``: with
local keys every process reads the home's own files).
"""

from __future__ import annotations

import base64
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from ledger import NotFound
from ledger.certificates import LocalSigner, PredicateInvalid

from .._errors import InfrastructureError
from ..keys import DigestKeys
from ..replay.certificates import signing_key
from ._auth import State
from ._errors import ERROR_RESPONSES, ServiceError
from ._job_checks import JobClaim, current_worker, running_admitted_audit

__all__ = ["router"]

log = logging.getLogger("enclave.service")
router = APIRouter(responses=ERROR_RESPONSES)
_ID = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$"


class DigestKeyAnswer(BaseModel):
    tenant_id: str
    digest_key: str  # base64


class SignatureRequest(JobClaim):
    specimen_id: str = Field(pattern=_ID)
    manifest_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    predicate: dict[str, Any]


class SignatureAnswer(BaseModel):
    envelope: dict[str, Any]


def _vault_mode(state: State) -> None:
    if state.runtime.provider != "transit":
        raise ServiceError(404, "grants_unavailable", "grants are minted here in Vault mode only")


@router.post(
    "/digest-keys",
    response_model=DigestKeyAnswer,
    summary="The tenant digest key of a claimed job (replay workers in Vault mode)",
)
def digest_key(
    state: State,
    worker: Annotated[str, Depends(current_worker)],
    body: JobClaim,
    response: Response,
) -> dict[str, Any]:
    _vault_mode(state)
    runtime, now = state.runtime, state.clock()
    lease, tenant, _specimen = running_admitted_audit(runtime, worker, body, now)
    try:
        if not isinstance(runtime.digests, DigestKeys):  # the service keeps the home's keyring
            raise InfrastructureError("no keyring")
        secret = runtime.digests.secret_of(tenant)
    except InfrastructureError:
        raise ServiceError(409, "unresolvable", "the tenant has no digest key here") from None
    runtime.ledger.append(
        "digest_key.issued",
        body.job_id,
        {"job_id": body.job_id, "audit_id": lease.audit_id, "tenant_id": tenant, "worker": worker},
    )
    log.info("digest key issued job=%s worker=%s", body.job_id, worker)
    response.headers["Cache-Control"] = "no-store"
    return {"tenant_id": tenant, "digest_key": base64.b64encode(secret).decode()}


@router.post(
    "/signatures",
    response_model=SignatureAnswer,
    summary="Sign the certificate of a claimed finalize job (replay workers in Vault mode)",
)
def sign(
    state: State, worker: Annotated[str, Depends(current_worker)], body: SignatureRequest
) -> dict[str, Any]:
    _vault_mode(state)
    runtime, now = state.runtime, state.clock()
    claim = JobClaim(job_id=body.job_id, fencing_token=body.fencing_token)
    lease, _tenant, specimen = running_admitted_audit(runtime, worker, claim, now)
    not_this = ServiceError(409, "not_this_audit", "the statement is not this job's audit's")
    if lease.kind != "finalize" or body.specimen_id != specimen:
        raise not_this
    try:
        sealed = runtime.ledger.get_specimen(specimen).manifest_digest
    except NotFound:
        raise not_this from None
    if body.manifest_digest != sealed:
        raise not_this
    try:
        envelope = LocalSigner(signing_key(runtime)).sign_certificate(
            specimen_id=specimen, manifest_digest=sealed, predicate=body.predicate
        )
    except PredicateInvalid as exc:
        first = exc.problems[0].split(":", 1)[0] if exc.problems else "/predicate"
        raise ServiceError(
            422, "predicate_invalid", f"the predicate is invalid at {first}"
        ) from None
    log.info("certificate signed job=%s worker=%s", body.job_id, worker)
    return {"envelope": envelope}
