"""Routes for who am I, specimens and intervention policies (metadata only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response

from ledger import SpecimenFilter, SpecimenRecord, StepKind

from .._retention import effective_retention_of
from ..governance import Action, PolicyStatus, Resource, list_policies
from ._auth import CurrentAnalyst, State, require
from ._cursor import read_specimens_cursor, specimens_cursor
from ._errors import ERROR_RESPONSES
from ._models import NO_CONTROL, PolicyList, SpecimenDetail, SpecimenList, WhoAmI
from ._views import ADMISSIBLE, specimen_detail, specimen_resource

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

MAX_LIMIT = 500
SpecimenId = Annotated[str, Path(min_length=1, max_length=128, pattern=NO_CONTROL)]
Name = Annotated[str | None, Query(min_length=1, max_length=128, pattern=NO_CONTROL)]


@router.get("/whoami", response_model=WhoAmI, summary="The analyst the token belongs to")
async def whoami(analyst: CurrentAnalyst) -> dict[str, Any]:
    return {"name": analyst.name, "tenant": analyst.tenant, "roles": list(analyst.roles)}


@router.get("/specimens", response_model=SpecimenList, summary="Sealed specimens of a tenant")
async def specimens(
    state: State,
    analyst: CurrentAnalyst,
    tenant: Name = None,
    agent: Name = None,
    auditability: Literal["counterfactual-admissible", "observable-only"] | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(description="`next` of the previous page.")] = None,
) -> Response:
    """Newest seal first, one keyset page: every filter is an indexed column, so a page
    costs the same however many specimens there are. Async: its reads run on the list
    threads (``_state``), so a burst of listings cannot hold every thread."""
    tenant = tenant or analyst.tenant
    before = None if cursor is None else read_specimens_cursor(cursor)
    where = SpecimenFilter(
        tenant_id=tenant,
        agent_name=agent,
        admissible=None if auditability is None else auditability == ADMISSIBLE,
        now=None if auditability is None else state.clock(),
    )

    def read() -> dict[str, Any]:
        require(state, analyst, Action.LIST_SPECIMENS, Resource.tenant_of(tenant))
        ledger = state.runtime.ledger
        page = ledger.specimen_page(where, limit=limit, before=before)
        return {
            "items": [r.to_dict() for r in page.items],
            "limit": limit,
            "next": None if page.next_before is None else specimens_cursor(page.next_before),
            "total": ledger.count_specimens(where),
        }

    return await state.list_read(read, SpecimenList)


@router.get(
    "/specimens/{specimen_id}",
    response_model=SpecimenDetail,
    summary="One specimen: identities, digests, classifications — never content",
)
def specimen(state: State, analyst: CurrentAnalyst, specimen_id: SpecimenId) -> dict[str, Any]:
    ledger = state.runtime.ledger
    record = ledger.get_specimen(specimen_id)  # NotFound -> 404
    require(state, analyst, Action.READ_SPECIMEN, specimen_resource(record))
    retention = effective_retention_of(state.runtime, record.specimen_id, record.retention_class)
    return {
        **specimen_detail(record),
        **cuts_of(record),
        "retention_class": record.retention_class,
        "effective_retention": retention,
    }


def cuts_of(record: SpecimenRecord) -> dict[str, Any]:
    """The recorded cuts (name and call id, in the order the run reached them; never
    their state) and the auditability sealed in the manifest (``docs/cuts.md``), None
    for a specimen sealed before cuts existed."""
    steps = sorted((s for s in record.steps if s.kind is StepKind.CUT), key=lambda s: s.seq)
    sealed = record.manifest.get("auditability")
    klass = sealed.get("class") if isinstance(sealed, dict) else None
    return {
        "cuts": [{"name": s.name, "call_id": s.call_id} for s in steps],
        "sealed_auditability": klass if isinstance(klass, str) else None,
    }


@router.get("/policies", response_model=PolicyList, summary="Intervention policies of your tenant")
def policies(
    state: State,
    analyst: CurrentAnalyst,
    status: Literal["draft", "validated", "active", "retired"] | None = None,
) -> dict[str, Any]:
    require(state, analyst, Action.LIST_POLICIES, Resource.tenant_of(analyst.tenant))
    found = list_policies(
        state.runtime,
        status=None if status is None else PolicyStatus(status),
        tenant=analyst.tenant,
    )
    keys = ("id", "version", "tenant", "tool", "schema_id", "schema_version", "field", "strategy")
    return {
        "items": [
            {
                **{k: p.to_dict()[k] for k in keys},
                "params": p.params_dict(),
                "status": p.status.value,
            }
            for p in found
        ]
    }
