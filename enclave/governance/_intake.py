"""Admitting an audit request: eligibility, disclosure budget, ledger record, submit.

0. What cannot be right or cannot change anything is refused before it is charged: a
   purpose must be visible text (``invalid_purpose``), a perturbation's delta a normal,
   non-zero number (``no_effect``: a subnormal shift is lost in any field it is added to).
1. ``check_eligibility`` (fail closed, one refusal code per unmet condition); then the
   caller's ``authorize`` of what only eligibility knows — the inference grants of the
   policy that matched (the service asks Cedar about the data flow they open). A
   refusal there is charged nothing.
2. Disclosure budget, in bits: the request is charged the disclosure bound its
   certificate can state at most (``enclave.replay.disclosure_bound`` from the request
   and the sealed manifest's vocabulary, known before anything runs; the recorded
   proposal's fields, encrypted, count at their cap). The bits charged by the
   requester's ``audit.admitted`` entries for this (specimen, field) within the
   matched policy's window, plus this charge, must not exceed ``budget.bits`` (and,
   where the policy caps the count, they must number fewer than ``budget.audits``);
   otherwise ``BudgetExhausted`` (HTTP 429) with the seconds until enough of them
   leave the window. An entry without a recorded charge counts ``BITS_PER_AUDIT``.
3. Record the admission in the ledger *before* anything runs: ``audit.admitted``
   (subject: the specimen) with who, purpose, when and what — metadata only; the
   parameter itself appears as a keyed digest — the policy that authorised it, and
   the bits charged. A request that fails after this still counts against the budget
   (fail closed) — unless it was cancelled before any of its work was claimed: then
   ``audit.refunded`` (subject: the specimen) names its request id and the budget no
   longer counts it (``enclave.jobs.cancel_audit``). Refunds are read before the tip is
   locked: one that lands meanwhile only makes this check stricter.
4. Submit it (the caller's ``submit``, e.g. the job queue) with the request id as its
   idempotency key; the queue records ``audit.requested`` (subject: the audit id)
   with the audit's rows.

Steps 2-3 run as one ledger transaction with the chain's tip locked
(``Ledger.append_checked``): every writer on every process and host serialises there,
so concurrent requests cannot together take more than the budget.

Refusals are recorded as ``audit.refused`` with the analyst and the code only.
"""

from __future__ import annotations

import math
import secrets
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from ledger import EntryRecord

from .._errors import BadInput, Refused
from .._runtime import Runtime
from ..replay import AuditRequest
from ..replay.disclosure import VocabularySize, disclosure_bound
from ..replay.requests import PER_SAMPLE
from ._analysts import Analyst
from ._budget import BITS_PER_AUDIT
from ._eligibility import AuditDraft, Eligible, check_eligibility

__all__ = [
    "Admitted",
    "BudgetExhausted",
    "InvalidPurpose",
    "NoEffect",
    "admit_audit",
    "budget_used",
    "check_purpose",
    "record_refusal",
]

T = TypeVar("T")
CHANNEL = "service"


class BudgetExhausted(Refused):
    """The requester's disclosure budget for this (specimen, field) is used up."""

    http_status = 429

    def __init__(self, *, retry_after: int) -> None:
        super().__init__(
            "the disclosure budget for this specimen and field is used up for now",
            code="disclosure_budget_exhausted",
        )
        self.retry_after = retry_after

    def http_headers(self) -> dict[str, str] | None:
        return {"Retry-After": str(self.retry_after)}


class InvalidPurpose(BadInput):
    """The stated purpose is empty, invisible, or holds control or format characters."""

    code = "invalid_purpose"


class NoEffect(BadInput):
    """The requested change cannot change anything (e.g. a zero or subnormal delta)."""

    code = "no_effect"


# control, format, line and paragraph separators, surrogates, private use, unassigned:
# none belongs in a reason a person reads in the ledger
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def check_purpose(purpose: object) -> str:
    """``purpose`` if it is visible text: at least one character that is not a space,
    and no control or format character anywhere."""
    if not isinstance(purpose, str) or not 1 <= len(purpose) <= 500:
        raise InvalidPurpose("a purpose must be 1-500 characters of visible text")
    categories = {unicodedata.category(ch) for ch in purpose}
    if categories & _INVISIBLE_CATEGORIES or categories <= {"Zs"}:
        raise InvalidPurpose("a purpose must be visible text without control characters")
    return purpose


def _check_effect(draft: AuditDraft) -> None:
    delta = draft.delta
    if delta is not None and (delta == 0 or abs(delta) < sys.float_info.min):
        raise NoEffect("the delta is zero or too small to change any value")


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
    refunded = refunded_requests(runtime, specimen_id)
    found = _admissions(admitted, analyst=analyst, field=field, since=since, refunded=refunded)
    return [at for at, _ in found]


def refunded_requests(runtime: Runtime, specimen_id: str) -> frozenset[str]:
    """Request ids of the specimen's admissions given back by a cancel before any work."""
    entries = runtime.ledger.entries(kind="audit.refunded", subject=specimen_id)
    return frozenset(str(e.body.get("request_id")) for e in entries)


def _charged(body: dict[str, Any]) -> float:
    bits = body.get("disclosure_bits")
    if isinstance(bits, int | float) and not isinstance(bits, bool) and 0 <= bits <= 1e9:
        return float(bits)
    return BITS_PER_AUDIT  # recorded before charges were (fail closed)


def _admissions(
    entries: Sequence[EntryRecord],
    *,
    analyst: str,
    field: str,
    since: datetime,
    refunded: frozenset[str],
) -> list[tuple[datetime, float]]:
    """(when, bits charged) of the analyst's admissions of (specimen, field) since then,
    less those refunded."""
    found = []
    for entry in entries:
        body = entry.body
        if (
            body.get("request_id") in refunded
            or body.get("channel") != CHANNEL
            or body.get("analyst") != analyst
            or body.get("field") != field
        ):
            continue
        at = _parse(body.get("requested_at"))
        if at is None or at >= since:
            found.append((at or since, _charged(body)))  # an unreadable time counts
    return sorted(found)


def request_bits(eligible: Eligible) -> float:
    """The request's charge: no less than the disclosure bound its certificate will state
    (that one counts the recorded proposal's fields, this one their cap)."""
    request = eligible.request
    return disclosure_bound(
        samples=request.samples,
        tolerance=request.tolerances.score,
        vocabulary=VocabularySize.of_manifest(eligible.record.manifest),
        inference=request.inference,
        per_sample=request.detail == PER_SAMPLE,
    ).bits


def _budget_check(
    eligible: Eligible, *, analyst: str, now: datetime, bits: float, refunded: frozenset[str]
) -> Callable[[list[EntryRecord]], None]:
    """A check over the specimen's admissions, run by the ledger with its tip locked."""
    budget = eligible.policy.budget
    window = timedelta(seconds=budget.window_seconds)

    def fits(used: list[tuple[datetime, float]]) -> bool:
        if budget.audits is not None and len(used) >= budget.audits:
            return False
        return math.fsum(b for _, b in used) + bits <= budget.bits_total + 1e-9

    def check(admitted: list[EntryRecord]) -> None:
        used = _admissions(
            admitted, analyst=analyst, field=eligible.field, since=now - window, refunded=refunded
        )
        if fits(used):
            return
        # the earliest time by which enough of the oldest charges have left the window
        for n in range(1, len(used) + 1):
            if fits(used[n:]):
                retry = max(1, int((used[n - 1][0] + window - now).total_seconds()) + 1)
                raise BudgetExhausted(retry_after=retry)
        raise BudgetExhausted(retry_after=budget.window_seconds)  # larger than the budget

    return check


def _requested_body(
    runtime: Runtime, eligible: Eligible, *, analyst: Analyst, request_id: str, now: datetime
) -> dict[str, Any]:
    request = eligible.request
    kind, _ = request.parameters()
    digester = runtime.digests.for_tenant(eligible.record.tenant_id)
    return {
        "disclosure_bits": request_bits(eligible),
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
        # the certificate's request digest: keyed to the specimen and target, purpose
        # "request" (``docs/digests.md``)
        "parameters": {
            "kind": kind,
            "digest": request.parameters_digest(call_id=eligible.target_call_id, digester=digester),
        },
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
    authorize: Callable[[Eligible], None] | None = None,
) -> Admitted[T]:
    # 0.
    check_purpose(draft.purpose)
    _check_effect(draft)
    # 1.
    eligible = check_eligibility(runtime, draft, requester=analyst.name, tenant=analyst.tenant)
    if authorize is not None:
        authorize(eligible)
    request_id = f"rq-{secrets.token_hex(8)}"
    refunded = refunded_requests(runtime, eligible.record.specimen_id)
    # 2. + 3. the budget is checked and the admission recorded in one ledger transaction,
    # serialised with every other writer on every host: concurrent requests cannot
    # together overrun the budget.
    runtime.ledger.append_checked(
        "audit.admitted",
        eligible.record.specimen_id,
        _requested_body(runtime, eligible, analyst=analyst, request_id=request_id, now=now),
        among=("audit.admitted", eligible.record.specimen_id),
        check=_budget_check(
            eligible,
            analyst=analyst.name,
            now=now,
            bits=request_bits(eligible),
            refunded=refunded,
        ),
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
