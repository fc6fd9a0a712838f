"""Admitting an audit request: eligibility, disclosure budget, ledger record, submit.

1. ``check_eligibility`` (fail closed, one refusal code per unmet condition).
2. Disclosure budget: the requester's ``audit.admitted`` entries for this
   (specimen, field) within the matched policy's window must number fewer than its
   ``budget.audits``; otherwise ``BudgetExhausted`` (HTTP 429) with the seconds until
   the oldest one leaves the window.
3. Record the admission in the ledger *before* anything runs: ``audit.admitted``
   (subject: the specimen) with who, purpose, when and what — metadata only; the
   parameter itself appears as a keyed digest — and the policy that authorised it.
   A request that fails after this still counts against the budget (fail closed).
4. Submit it (the caller's ``submit``, e.g. the job queue) with the request id as its
   idempotency key; the queue records ``audit.requested`` (subject: the audit id)
   with the audit's rows.

Steps 2-3 run as one ledger transaction with the chain's tip locked
(``Ledger.append_checked``): every writer on every process and host serialises there,
so concurrent requests cannot together take more than the budget.

Refusals are recorded as ``audit.refused`` with the analyst and the code only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from ledger import EntryRecord, canonical_json

from .._errors import Refused
from .._runtime import Runtime
from ..replay import AuditRequest
from ._analysts import Analyst
from ._eligibility import AuditDraft, Eligible, check_eligibility

__all__ = [
    "Admitted",
    "BudgetExhausted",
    "admit_audit",
    "budget_used",
    "record_refusal",
]

T = TypeVar("T")
CHANNEL = "service"


class BudgetExhausted(Refused):
    """The requester's disclosure budget for this (specimen, field) is used up."""

    def __init__(self, *, retry_after: int) -> None:
        super().__init__(
            "the disclosure budget for this specimen and field is used up for now",
            code="disclosure_budget_exhausted",
        )
        self.retry_after = retry_after


@dataclass(frozen=True)
class Admitted(Generic[T]):
    request_id: str
    eligible: Eligible
    status: T


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def budget_used(
    runtime: Runtime, *, analyst: str, specimen_id: str, field: str, since: datetime
) -> list[datetime]:
    """When the analyst requested audits of (specimen, field) at or after ``since``."""
    admitted = runtime.ledger.entries(kind="audit.admitted", subject=specimen_id)
    return _admissions(admitted, analyst=analyst, field=field, since=since)


def _admissions(
    entries: Sequence[EntryRecord], *, analyst: str, field: str, since: datetime
) -> list[datetime]:
    times = []
    for entry in entries:
        body = entry.body
        if (
            body.get("channel") != CHANNEL
            or body.get("analyst") != analyst
            or body.get("field") != field
        ):
            continue
        at = _parse(body.get("requested_at"))
        if at is None or at >= since:
            times.append(at or since)  # an unreadable time counts (fail closed)
    return sorted(times)


def _budget_check(
    eligible: Eligible, *, analyst: str, now: datetime
) -> Callable[[list[EntryRecord]], None]:
    """A check over the specimen's admissions, run by the ledger with its tip locked."""
    budget = eligible.policy.budget
    window = timedelta(seconds=budget.window_seconds)

    def check(admitted: list[EntryRecord]) -> None:
        used = _admissions(admitted, analyst=analyst, field=eligible.field, since=now - window)
        if len(used) >= budget.audits:
            oldest = used[len(used) - budget.audits]
            retry = max(1, int((oldest + window - now).total_seconds()) + 1)
            raise BudgetExhausted(retry_after=retry)

    return check


def _requested_body(
    runtime: Runtime, eligible: Eligible, *, analyst: Analyst, request_id: str, now: datetime
) -> dict[str, Any]:
    request = eligible.request
    kind, value = request.parameters()
    digester = runtime.digests.for_tenant(eligible.record.tenant_id)
    return {
        "channel": CHANNEL,
        "request_id": request_id,
        "analyst": analyst.name,
        "tenant": analyst.tenant,
        "purpose": request.purpose,
        "requested_at": _iso(now),
        "specimen_id": request.specimen_id,
        "call_id": eligible.target_call_id,
        "field": eligible.field,
        "strategy": request.intervention.strategy.value,
        "parameters": {"kind": kind, "digest": digester.digest(canonical_json(value))},
        "policy": {"id": eligible.policy.id, "version": eligible.policy.version},
        "samples": request.samples,
        "seed": request.seed,
    }


def admit_audit(
    runtime: Runtime,
    draft: AuditDraft,
    *,
    analyst: Analyst,
    now: datetime,
    submit: Callable[[AuditRequest, str], T],
) -> Admitted[T]:
    # 1.
    eligible = check_eligibility(runtime, draft, requester=analyst.name, tenant=analyst.tenant)
    request_id = f"rq-{secrets.token_hex(8)}"
    # 2. + 3. the budget is checked and the admission recorded in one ledger transaction,
    # serialised with every other writer on every host: concurrent requests cannot
    # together overrun the budget.
    runtime.ledger.append_checked(
        "audit.admitted",
        eligible.record.specimen_id,
        _requested_body(runtime, eligible, analyst=analyst, request_id=request_id, now=now),
        among=("audit.admitted", eligible.record.specimen_id),
        check=_budget_check(eligible, analyst=analyst.name, now=now),
    )
    # 4.
    status = submit(eligible.request, request_id)
    return Admitted(request_id, eligible, status)


def record_refusal(
    runtime: Runtime, *, analyst: Analyst, code: str, now: datetime, specimen_id: str | None = None
) -> None:
    """Record a refused request: who, when, why. The specimen id only if it is a real one."""
    body: dict[str, Any] = {
        "analyst": analyst.name,
        "tenant": analyst.tenant,
        "code": code,
        "at": _iso(now),
    }
    subject = "-"
    if specimen_id is not None and runtime.ledger.entries(
        kind="specimen.sealed", subject=specimen_id
    ):
        body["specimen_id"] = subject = specimen_id
    runtime.ledger.append("audit.refused", subject, body)
