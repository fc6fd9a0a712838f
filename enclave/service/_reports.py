"""Routes for signed release reports (``regress``), stored in the database.

``GET /reports`` lists one keyset page (newest first) of the reports the analyst may
read; ``GET /reports/{report_id}`` is the DSSE envelope as a download and
``/reports/{report_id}/summary`` its decoded predicate (metadata only: certificate
digests, labels, totals and the gate); ``/reports/{report_id}/bundle`` the report with
the proofs that verify it offline, and the bundles of the certificates it names — each
of which the analyst must also be allowed to read (``read_certificate``, else 403).

Access is Cedar's ``read_report``: first on the analyst's own tenant (a viewer is
refused, 403, whatever the id), then on the ``Report`` with the one tenant all its
specimens belong to. A report of another tenant, or one spanning tenants, is to
anyone but an operator exactly what an unknown id is: 404 ``not_found``, so the
answer is no oracle of which reports exist.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ledger import REPORT_ID, MalformedDocument, StoredReport, report_page, stored_report

from ..governance import Action, Analyst, Resource
from ._auth import CurrentAnalyst, State, require
from ._cursor import _bad, _decode, _encode
from ._errors import ERROR_RESPONSES, ServiceError
from ._state import ServiceState

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

MAX_LIMIT = 500
ReportId = Annotated[str, Path(min_length=19, max_length=19, pattern=f"^{REPORT_ID.pattern}$")]
# [0-9], not \d: \d also matches other scripts' digits, which no issued cursor holds
_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})?"
)


class ReportSummaryModel(BaseModel):
    report_id: str
    issued_at: str
    gate_passed: bool
    specimens: int
    selection_digest: str


class ReportList(BaseModel):
    """One keyset page; ``next`` is the cursor of the following page (None: the end)."""

    items: list[ReportSummaryModel]
    limit: int
    next: str | None
    total: int


def reports_cursor(issued_at: str, report_id: str) -> str:
    return _encode(["reports", issued_at, report_id])


def read_reports_cursor(cursor: str) -> tuple[str, str]:
    """The (issued_at, report id) a reports page continues before."""
    _, issued_at, report_id = _decode(cursor, "reports", 3)
    if not isinstance(issued_at, str) or not _TIME.fullmatch(issued_at):
        raise _bad()
    if not isinstance(report_id, str) or not REPORT_ID.fullmatch(report_id):
        raise _bad()
    return issued_at, report_id


def _resource(report: StoredReport) -> Resource:
    return Resource.report(report.report_id, report.tenant_id)


def _every_tenant(state: ServiceState, analyst: Analyst) -> bool:
    """Whether the policy lets this analyst read a report spanning tenants (operators):
    asked of the policy itself, so the listing can leave the tenant filter out."""
    probe = Resource.report("rr-0000000000000000", None)
    return state.access.authorize(analyst, Action.READ_REPORT, probe, now=state.clock()).allowed


def _not_found() -> ServiceError:
    return ServiceError(404, "not_found", "no such resource")


def _readable(state: ServiceState, analyst: Analyst, report_id: str) -> StoredReport:
    require(state, analyst, Action.READ_REPORT, Resource.tenant_of(analyst.tenant))
    report = stored_report(state.runtime.ledger.engine, report_id)
    if report is None:
        raise _not_found()
    decision = state.access.authorize(
        analyst, Action.READ_REPORT, _resource(report), now=state.clock()
    )
    if not decision.allowed:
        raise _not_found()  # the same answer as an unknown id
    return report


@router.get("/reports", response_model=ReportList, summary="Release reports, newest first")
async def reports(
    state: State,
    analyst: CurrentAnalyst,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(description="`next` of the previous page.")] = None,
) -> Response:
    """One keyset page of the reports the analyst may read: those of their tenant (an
    operator: every report). Each listed report is still authorised on its own.
    Async: its reads run on the list threads (``_state``)."""
    after = None if cursor is None else read_reports_cursor(cursor)

    def read() -> dict[str, Any]:
        require(state, analyst, Action.READ_REPORT, Resource.tenant_of(analyst.tenant))
        page = report_page(
            state.runtime.ledger.engine,
            tenant_id=analyst.tenant,
            every_tenant=_every_tenant(state, analyst),
            limit=limit,
            after=after,
        )
        decisions = state.access.authorize_many(
            analyst, Action.READ_REPORT, [_resource(r) for r in page.items], now=state.clock()
        )
        visible = [r for r, d in zip(page.items, decisions, strict=True) if d.allowed]
        return {
            "items": [r.summary() for r in visible],
            "limit": limit,
            "next": None if page.next_after is None else reports_cursor(*page.next_after),
            "total": page.total,
        }

    return await state.list_read(read, ReportList)


@router.get(
    "/reports/{report_id}",
    response_model=dict[str, Any],
    summary="The signed release report (DSSE envelope) as a download",
)
def report(state: State, analyst: CurrentAnalyst, report_id: ReportId) -> JSONResponse:
    found = _readable(state, analyst, report_id)
    return JSONResponse(
        found.envelope,
        headers={"Content-Disposition": f'attachment; filename="{found.report_id}.dsse.json"'},
    )


@router.get(
    "/reports/{report_id}/summary",
    response_model=dict[str, Any],
    summary="The release report's predicate, decoded (metadata only)",
)
def report_summary(state: State, analyst: CurrentAnalyst, report_id: ReportId) -> Any:
    found = _readable(state, analyst, report_id)
    try:
        return found.predicate
    except MalformedDocument:  # a stored report that is not a statement
        raise ServiceError(503, "report_unreadable", "the stored report is malformed") from None


@router.get(
    "/reports/{report_id}/bundle",
    response_model=dict[str, Any],
    summary="The release report with C2SP proofs of its ledger entry and of every "
    "certificate it names, as a download",
)
def report_bundle(state: State, analyst: CurrentAnalyst, report_id: ReportId) -> JSONResponse:
    """The envelope, a tlog-proof of its ``release.reported`` entry and each named
    certificate's bundle: verifiable offline with the issuer's and the log's keys. It
    carries the certificates themselves, so each must be one the analyst may read
    (``403`` otherwise, before anything is proven)."""
    from ..release import report_bundle as bundle_of
    from ._audits import _authorised_status

    found = _readable(state, analyst, report_id)

    def may_read(audit_id: str) -> None:
        _authorised_status(state, analyst, audit_id, Action.READ_CERTIFICATE)

    return JSONResponse(
        bundle_of(state.runtime, found.report_id, may_read=may_read),
        headers={"Content-Disposition": f'attachment; filename="{found.report_id}.bundle.json"'},
    )
