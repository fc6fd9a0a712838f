"""Routes for audits and their certificates.

``POST /audits`` is the one route that starts work. In order: the specimen must
exist (else 403 ``unknown_specimen``), Cedar must allow ``request_audit`` on it with
the stated purpose, then ``governance.admit_audit`` checks eligibility — and, when the
policy that matched grants inference, Cedar is asked again with the data flow those
grants open (the highest classification of the governed boundaries' fields) before
anything is charged — then the disclosure budget, records the admission and submits
the job; the answer names the inference grants the request carries. Every refusal is
recorded in the ledger (``audit.refused``) with its code.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse

from ledger import CLASSIFICATION_RANK, LedgerError, NotFound, loads
from ledger.certificates import load_public_key_pem, verify_certificate

from .._errors import BadInput, Refused
from .._issuer_key import issuer_public_path
from ..governance import (
    Action,
    AuditDraft,
    Eligible,
    Resource,
    admit_audit,
    inference_classification,
    record_refusal,
)
from ..replay.certificates import RuntimeLedgerLookup, certificate_bundle
from . import _jobs as jobs
from ._auth import CurrentAnalyst, State, require
from ._cursor import audits_cursor, read_audits_cursor
from ._errors import ERROR_RESPONSES, ServiceError
from ._models import (
    NO_CONTROL,
    AuditBody,
    AuditList,
    AuditRequestedModel,
    AuditStatusModel,
    CancelBody,
    CertificateSummary,
    VerifyReport,
)
from ._state import ServiceState
from ._views import specimen_resource

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

AuditId = Annotated[str, Path(min_length=1, max_length=128, pattern=NO_CONTROL)]


def _audit_resource(state: ServiceState, status: Any) -> Resource:
    try:
        record = state.runtime.ledger.get_specimen(status.specimen_id)
        classification, hold = record.highest_classification.value, record.legal_hold
    except NotFound:
        classification, hold = "restricted", False  # unknown: the strictest reading
    return Resource(
        kind="Audit",
        id=status.audit_id,
        tenant=status.tenant_id,
        classification=classification,
        legal_hold=hold,
        requester=status.requester,
    )


def _authorised_status(state: ServiceState, analyst: Any, audit_id: str, action: Action) -> Any:
    status = jobs.audit_status(state.runtime, audit_id)  # NotFound -> 404
    require(state, analyst, action, _audit_resource(state, status))
    return status


@router.post(
    "/audits",
    status_code=202,
    response_model=AuditRequestedModel,
    summary="Request an audit (queued; refusals name the unmet condition)",
)
def request_audit(state: State, analyst: CurrentAnalyst, body: AuditBody) -> dict[str, Any]:
    runtime, now = state.runtime, state.clock()

    def refuse(code: str, specimen_id: str | None = None) -> None:
        record_refusal(runtime, analyst=analyst, code=code, now=now, specimen_id=specimen_id)

    try:
        record = runtime.ledger.get_specimen(body.specimen_id)
    except NotFound:
        refuse("unknown_specimen")
        raise ServiceError(403, "unknown_specimen", "no sealed specimen has that id") from None
    decision = state.access.authorize(
        analyst, Action.REQUEST_AUDIT, specimen_resource(record), purpose=body.purpose, now=now
    )
    if not decision.allowed:
        refuse(decision.code, record.specimen_id)
        raise ServiceError(403, decision.code, "access denied by policy")
    draft = AuditDraft(
        specimen_id=body.specimen_id,
        strategy=body.strategy,
        purpose=body.purpose,
        samples=body.samples,
        seed=body.seed,
        call_id=body.call_id,
        field=body.field,
        value=body.value,
        value_given="value" in body.model_fields_set,
        delta=body.delta,
        revision=body.revision,
        tolerances=body.tolerances,
        policy_id=body.policy_id,
        from_cut=body.from_cut,
        detail=body.detail,
    )

    def inference_flow(eligible: Eligible) -> None:
        flow = inference_classification(eligible.record, eligible.request.inference)
        if flow is None:
            return
        decision = state.access.authorize(
            analyst,
            Action.REQUEST_AUDIT,
            specimen_resource(record),
            purpose=body.purpose,
            now=now,
            inference=flow,
        )
        if not decision.allowed:
            raise Refused("access denied by policy", code=decision.code)

    try:
        admitted = admit_audit(
            runtime,
            draft,
            analyst=analyst,
            now=now,
            submit=lambda request, key: jobs.submit_audit(
                runtime, request, tenant_id=analyst.tenant, now=now, idempotency_key=key
            ),
            authorize=inference_flow,
        )
    except (Refused, BadInput) as exc:
        refuse(exc.code, record.specimen_id)
        raise
    result = admitted.status.to_dict()
    assert isinstance(result, dict)
    result["inference"] = [g.to_dict() for g in admitted.eligible.request.inference]
    return result


def _readable_ranks(state: ServiceState, analyst: Any, now: Any) -> frozenset[int]:
    """The specimen classification ranks whose audits the access policy lets this
    analyst read, asked of the policy itself (one probe per classification) so the
    listing can filter in SQL. Each listed audit is still authorised on its own."""
    probes = [
        Resource(
            kind="Audit",
            id=f"-{name}",
            tenant=analyst.tenant,
            classification=name,
            requester=analyst.name,
        )
        for name in CLASSIFICATION_RANK
    ]
    decisions = state.access.authorize_many(analyst, Action.READ_AUDIT, probes, now=now)
    return frozenset(
        rank for rank, d in zip(CLASSIFICATION_RANK.values(), decisions, strict=True) if d.allowed
    )


@router.get("/audits", response_model=AuditList, summary="Audits of your tenant, newest first")
async def audits(
    state: State,
    analyst: CurrentAnalyst,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(description="`next` of the previous page.")] = None,
) -> Response:
    """One keyset page of the audits the analyst may open: the classification wall is a
    SQL condition (``_readable_ranks``), so a page costs the same however many audits
    there are; then each audit on the page is authorised with its specimen's walls, and
    one the policy refuses for another reason is left out (the page is then shorter).
    Async: its reads run on the list threads (``_state``)."""
    after = None if cursor is None else read_audits_cursor(cursor)

    def read() -> dict[str, Any]:
        require(state, analyst, Action.READ_AUDIT, Resource.tenant_of(analyst.tenant))
        now = state.clock()
        page = jobs.audit_page(
            state.runtime,
            tenant_id=analyst.tenant,
            ranks=_readable_ranks(state, analyst, now),
            limit=limit,
            after=after,
        )
        decisions = state.access.authorize_many(
            analyst, Action.READ_AUDIT, [_listed_resource(item) for item in page.items], now=now
        )
        visible = [item for item, d in zip(page.items, decisions, strict=True) if d.allowed]
        readable = state.access.authorize_many(
            analyst, Action.READ_CERTIFICATE, [_listed_resource(item) for item in visible], now=now
        )
        found = jobs.findings(
            state.runtime,
            [item.status.audit_id for item, d in zip(visible, readable, strict=True) if d.allowed],
        )
        return {
            "items": [_with_finding(item.status, found) for item in visible],
            "limit": limit,
            "next": None if page.next_after is None else audits_cursor(*page.next_after),
            "total": page.total,
        }

    return await state.list_read(read, AuditList)


def _with_finding(status: Any, found: dict[str, str]) -> dict[str, Any]:
    """The finding is the certificate's figures in words: ``found`` holds it only for
    the audits whose certificate the caller may read."""
    return {**status.to_dict(), "finding": found.get(status.audit_id)}


def _listed_resource(item: Any) -> Resource:
    status = item.status
    return Resource(
        kind="Audit",
        id=status.audit_id,
        tenant=status.tenant_id,
        classification=item.specimen_classification or "restricted",
        legal_hold=item.specimen_legal_hold,
        requester=status.requester,
    )


@router.get("/audits/{audit_id}", response_model=AuditStatusModel, summary="One audit's status")
def audit(state: State, analyst: CurrentAnalyst, audit_id: AuditId) -> dict[str, Any]:
    status = _authorised_status(state, analyst, audit_id, Action.READ_AUDIT)
    readable = state.access.authorize(
        analyst, Action.READ_CERTIFICATE, _audit_resource(state, status), now=state.clock()
    )
    found = jobs.findings(state.runtime, [audit_id]) if readable.allowed else {}
    return _with_finding(status, found)


@router.post(
    "/audits/{audit_id}/cancel", response_model=AuditStatusModel, summary="Cancel an audit"
)
def cancel(
    state: State, analyst: CurrentAnalyst, audit_id: AuditId, body: CancelBody | None = None
) -> dict[str, Any]:
    """The requester or an admin of the audit's tenant; the reason is a code."""
    status = _authorised_status(state, analyst, audit_id, Action.CANCEL_AUDIT)
    reason = "withdrawn" if body is None else body.reason
    result = jobs.cancel_audit(
        state.runtime, status.audit_id, now=state.clock(), by=analyst.name, reason=reason
    ).to_dict()
    assert isinstance(result, dict)
    return result


def _envelope(state: ServiceState, analyst: Any, audit_id: str) -> tuple[str, dict[str, Any]]:
    status = _authorised_status(state, analyst, audit_id, Action.READ_CERTIFICATE)
    envelope = jobs.certificate(state.runtime, status.audit_id)
    if envelope is None:
        raise ServiceError(404, "no_certificate", "the audit has no certificate (yet)")
    return str(status.audit_id), envelope


@router.get(
    "/certificates/{audit_id}",
    response_model=dict[str, Any],
    summary="The signed certificate (DSSE envelope) as a download",
)
def certificate(state: State, analyst: CurrentAnalyst, audit_id: AuditId) -> JSONResponse:
    found_id, envelope = _envelope(state, analyst, audit_id)
    return JSONResponse(
        envelope,
        headers={"Content-Disposition": f'attachment; filename="{found_id}.dsse.json"'},
    )


@router.get(
    "/certificates/{audit_id}/bundle",
    response_model=dict[str, Any],
    summary="The certificate with C2SP proofs of its ledger entries, as a download",
)
def bundle(state: State, analyst: CurrentAnalyst, audit_id: AuditId) -> JSONResponse:
    """The envelope with tlog-proofs of its ``certificate.issued`` and ``specimen.sealed``
    entries against a checkpoint the log signed (the latest one when it covers both,
    else one signed now): verifiable offline with the issuer's and the log's keys."""
    found_id, _ = _envelope(state, analyst, audit_id)
    return JSONResponse(
        certificate_bundle(state.runtime, found_id),
        headers={"Content-Disposition": f'attachment; filename="{found_id}.bundle.json"'},
    )


@router.get(
    "/certificates/{audit_id}/summary",
    response_model=CertificateSummary,
    # members a certificate does not carry stay absent (no ``"inference": null``)
    response_model_exclude_unset=True,
    summary="The certificate's predicate, decoded (metadata only)",
)
def certificate_summary(state: State, analyst: CurrentAnalyst, audit_id: AuditId) -> Any:
    _, envelope = _envelope(state, analyst, audit_id)
    try:
        statement = loads(base64.b64decode(str(envelope["payload"]), validate=True))
        predicate = statement["predicate"]
    except (KeyError, TypeError, ValueError, binascii.Error, LedgerError):
        raise ServiceError(
            503, "certificate_unreadable", "the stored certificate is malformed"
        ) from None
    if not isinstance(predicate, dict):
        raise ServiceError(503, "certificate_unreadable", "the stored certificate is malformed")
    return predicate


@router.get(
    "/certificates/{audit_id}/verify",
    response_model=VerifyReport,
    summary="Verify the certificate: signature, statement, predicate, ledger linkage",
)
def certificate_verify(state: State, analyst: CurrentAnalyst, audit_id: AuditId) -> dict[str, Any]:
    _, envelope = _envelope(state, analyst, audit_id)
    runtime = state.runtime
    key_path = issuer_public_path(runtime.home)
    try:
        key = load_public_key_pem(key_path.read_bytes())
    except OSError:
        raise ServiceError(
            503, "no_issuer_key", "the issuer's public key is not available"
        ) from None
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    return report.to_dict()
