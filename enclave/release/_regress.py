"""``regress``: one audit per selected specimen, through the durable queue, then the
signed release report.

1. Select (``_library.select``): replayable members sorted, erased ones named apart.
2. Check each member's eligibility (sealed, of its tenant, not erased, bounded
   outcome: ``governance.check_specimen``), then submit one audit per member
   (``jobs.submit_audit``) with exactly one intervention:
   the candidate code (strategy CODE) or a declared revision swap (``model=r3``).
   Every audit keeps its own grant, baseline gate on the captured code, paired samples
   and certificate; a refusal at submission is that member's ``not-auditable`` row.
3. Wait until every audit is terminal; workers (``replay-enclave worker`` on any host
   sharing the database, or an in-process one with ``local``) run the jobs.
4. Build and sign the report (``_report``) from the certificates (or their absence);
   append ``release.reported`` and store the signed report in ``release_reports``
   (``ledger._documents``) with the one tenant its members belong to (none when they span
   tenants).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ledger import NotFound, report_id_of, store_report
from ledger.certificates import envelope_digest as digest_of

from .._errors import BadInput, EnclaveError, InfrastructureError
from .._runtime import Runtime
from ..governance import check_specimen
from ..jobs import certificate, open_audits, run_worker, submit_audit
from ..replay import AuditRequest, CandidateCode, Intervention, Strategy
from ..replay.certificates import signing_key
from ..replay.requests import check_samples
from ._library import Selection, check_tags
from ._report import SpecimenResult, build_report, label_of, sealed_cut, sign_report

__all__ = ["RegressPlan", "regress"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class RegressPlan:
    samples: int
    purpose: str
    requester: str
    candidate: CandidateCode | None = None
    revision: tuple[str, str] | None = None
    must_hold: tuple[str, ...] = ()  # tags; "*" holds every member
    seed: int = 1
    # boundaries whose substitute the operator takes as the service (no policy applies to
    # a release; see ``AuditRequest.authoritative_substitutes``)
    authoritative_substitutes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.candidate is None) == (self.revision is None):
            raise BadInput("give exactly one of --candidate or --revision")
        check_samples(self.samples)
        # a mistyped tag would hold nothing: the gate would pass on what had to hold
        held = [tag for tag in self.must_hold if tag != "*"]
        if held:
            check_tags(held)

    def intervention(self) -> Intervention:
        if self.candidate is not None:
            return Intervention(Strategy.CODE)
        return Intervention(Strategy.REVISION, revision=self.revision)

    def described(self) -> dict[str, Any]:
        if self.candidate is not None:
            return {"strategy": "CODE", **self.candidate.to_report()}
        assert self.revision is not None
        return {"strategy": "REVISION", "revision": "=".join(self.revision)}


def _payload(envelope: dict[str, Any]) -> dict[str, Any]:
    import base64
    import json

    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def regress(
    runtime: Runtime,
    selection: Selection,
    plan: RegressPlan,
    *,
    now: datetime,
    local: bool = False,
    isolation: str = "auto",
    progress: Progress | None = None,
    poll_seconds: float = 0.2,
    runtime_factory: Callable[[], Runtime] | None = None,
    workers: int = 1,
) -> tuple[dict[str, Any], bool]:
    """Run the plan over ``selection``; returns (signed report envelope, gate passed)."""
    submitted: dict[str, str] = {}
    baseline_code: list[str] = []
    records = {}
    for specimen_id in selection.specimens:
        record = records[specimen_id] = runtime.ledger.get_specimen(specimen_id)
        code = (record.manifest.get("code") or {}).get("digest")
        if isinstance(code, str):
            baseline_code.append(code)
        audit_id = f"au-{secrets.token_hex(8)}"
        try:
            # eligibility of the specimen itself (sealed, not erased, bounded outcome);
            # the intervention targets no recorded call, so no call policy applies
            check_specimen(runtime, specimen_id, tenant=record.tenant_id)
            request = AuditRequest(
                specimen_id=specimen_id,
                intervention=plan.intervention(),
                purpose=plan.purpose,
                requester=plan.requester,
                samples=plan.samples,
                seed=plan.seed,
                candidate=plan.candidate,
                authoritative_substitutes=plan.authoritative_substitutes,
            )
            submit_audit(runtime, request, tenant_id=record.tenant_id, now=now, audit_id=audit_id)
        except EnclaveError:
            continue  # refused at submission: that member's not-auditable row
        submitted[specimen_id] = audit_id
    _wait(
        runtime,
        submitted,
        local=local,
        isolation=isolation,
        progress=progress,
        poll_seconds=poll_seconds,
        factory=runtime_factory,
        workers=workers,
    )
    results = []
    for specimen_id in selection.specimens:
        tags = set(selection.tags.get(specimen_id, ()))
        must = "*" in plan.must_hold or bool(tags & set(plan.must_hold))
        queued = submitted.get(specimen_id)
        predicate: dict[str, Any] | None = None
        envelope_digest: str | None = None
        envelope = certificate(runtime, queued) if queued is not None else None
        if envelope is not None:
            predicate = _payload(envelope)["predicate"]
            envelope_digest = digest_of(envelope)
        # an audit that ended without a certificate keeps its failure code in its own
        # record (``audits show``): the report states only that it failed
        label, reason = label_of(predicate, refused=queued is None)
        sealed = records[specimen_id].manifest.get("auditability") or {}
        results.append(
            SpecimenResult(
                specimen_id=specimen_id,
                audit_id=queued,
                certificate=envelope_digest,
                label=label,
                reason=reason,
                sealed=sealed_cut(sealed.get("class")),
                must_hold=must,
            )
        )
    key = signing_key(runtime)
    statement = build_report(
        selector=selection.selector.to_dict(),
        selection_digest=selection.digest,
        erased=selection.erased,
        intervention=plan.described(),
        baseline_code=baseline_code,
        must_hold=plan.must_hold,
        samples=plan.samples,
        results=results,
        issued_at=now.isoformat(),
        issuer=key.keyid,
    )
    envelope = sign_report(statement, key)
    runtime.ledger.append(
        "release.reported",
        selection.digest,
        {
            "selection_digest": selection.digest,
            "specimens": len(results),
            "gate_passed": statement["predicate"]["gate"]["passed"],
            "report_id": report_id_of(envelope),
            "envelope_digest": digest_of(envelope),  # the whole report, not 64 bits
        },
    )
    store_report(runtime.ledger.engine, envelope, tenant_id=_one_tenant(runtime, selection))
    return envelope, bool(statement["predicate"]["gate"]["passed"])


def _one_tenant(runtime: Runtime, selection: Selection) -> str | None:
    """The tenant every member (erased ones included) belongs to; None if they span
    tenants or there are none."""
    tenants = set()
    for specimen_id in (*selection.specimens, *selection.erased):
        try:
            tenants.add(runtime.ledger.get_specimen(specimen_id).tenant_id)
        except NotFound:
            return None  # a member of unknown tenant: operators only
    return tenants.pop() if len(tenants) == 1 else None


def _wait(
    runtime: Runtime,
    submitted: dict[str, str],
    *,
    local: bool,
    isolation: str,
    progress: Progress | None,
    poll_seconds: float,
    factory: Callable[[], Runtime] | None,
    workers: int = 1,
) -> None:
    """Until every submitted audit is terminal; with ``local`` an in-process worker
    (one thread, its own runtime) runs the jobs meanwhile."""
    pending = set(submitted.values())
    total = len(pending)
    stop = threading.Event()
    worker = None
    if local and pending:
        worker = threading.Thread(
            target=run_worker,
            args=(factory or (lambda: Runtime.open(runtime.home)),),
            kwargs={
                "worker_id": f"regress-{secrets.token_hex(4)}",
                "concurrency": workers,
                "stop": stop,
                "isolation": isolation,
                "poll_seconds": poll_seconds,
            },
            name="regress-worker",
            daemon=True,
        )
        worker.start()
    # the waiter shares the process (and its interpreter lock) with the local worker:
    # one query per poll, and no faster than twice a second, whatever the library's size
    wait_seconds = max(poll_seconds, 0.5)
    try:
        while pending:
            pending = open_audits(runtime, pending)
            if progress:
                progress(total - len(pending), total)
            if pending:
                if worker is not None and not worker.is_alive():
                    raise InfrastructureError("the in-process worker stopped")
                time.sleep(wait_seconds)
    finally:
        stop.set()
        if worker is not None:
            worker.join()
