"""An audit run in one process: the three stages of ``_stages`` back to back.

The durable service runs the same stages as separate jobs (``enclave.jobs``); this is
the embedded path used by ``replay-enclave audit`` and the demo.

1. Record the request in the ledger (who, purpose, what).
2. ``prepare_audit``: grant, decrypt, prove the intervention, baseline gate.
3. ``run_sample_batch``: N paired samples on seeds S..S+N-1 (if the gate passed).
4. ``finalize_audit``: verdict, signed certificate or ``audit.failed``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime

from ledger import LedgerError

from .._errors import EnclaveError
from .._runtime import Runtime
from ..sandbox import SandboxLimits, pooled
from ._outcome import AuditOutcome
from ._request import COARSE_DETAIL, AuditRequest
from ._results import BatchResult
from ._stages import WORKER_HANDLER, finalize_audit, prepare_audit, run_sample_batch

__all__ = ["AuditOutcome", "record_request", "run_audit", "WORKER_HANDLER"]

DEFAULT_LEASE_SECONDS = 300

Progress = Callable[[int, int], None]


def record_request(
    runtime: Runtime, request: AuditRequest, *, audit_id: str, now: datetime
) -> None:
    runtime.ledger.append(
        "audit.requested",
        audit_id,
        {
            "audit_id": audit_id,
            "specimen_id": request.specimen_id,
            "requester": request.requester,
            "purpose": request.purpose,
            "intervention": request.intervention.to_dict(),
            "samples": request.samples,
            "seed": request.seed,
            "requested_at": now.isoformat(),
            **({"code_revision": request.code_revision} if request.code_revision else {}),
            **({"from_cut": request.from_cut} if request.from_cut else {}),
            **({"detail": request.detail} if request.detail != COARSE_DETAIL else {}),
        },
    )


def run_audit(
    runtime: Runtime,
    request: AuditRequest,
    *,
    now: datetime,
    progress: Progress | None = None,
    isolation: str = "auto",
    limits: SandboxLimits | None = None,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    audit_id: str | None = None,
) -> AuditOutcome:
    """Audit a sealed specimen with the request's one intervention and return the
    outcome with its signed certificate.

    In order: the request is recorded in the ledger, a single-use grant opens the
    specimen inside an isolated worker, the untouched baseline must reproduce at the
    declared tolerances, then ``request.samples`` paired seeds (baseline, intervened,
    placebo) are replayed from the record — any live call aborts the branch — and the
    verdict is signed and appended. A failure is an outcome with ``failure`` set and
    no conclusion, never a partial result. ``isolation`` is ``auto`` (bubblewrap) or the
    loudly named ``UNSAFE_development``; ``progress(done, total)`` is called per run::

        outcome = enclave.run_audit(runtime, request, now=datetime.now(UTC))
        outcome.classification, outcome.certificate_path
    """
    audit_id = audit_id or f"au-{secrets.token_hex(8)}"
    record_request(runtime, request, audit_id=audit_id, now=now)
    # the workers of its stages fork from zygotes (the caller's, or the audit's own)
    with pooled():
        return _stages_in_turn(
            runtime,
            request,
            audit_id=audit_id,
            now=now,
            progress=progress,
            isolation=isolation,
            limits=limits,
            lease_seconds=lease_seconds,
        )


def _stages_in_turn(
    runtime: Runtime,
    request: AuditRequest,
    *,
    audit_id: str,
    now: datetime,
    progress: Progress | None,
    isolation: str,
    limits: SandboxLimits | None,
    lease_seconds: int,
) -> AuditOutcome:
    total = 1 + request.samples
    try:
        preparation = prepare_audit(
            runtime,
            request,
            audit_id=audit_id,
            now=now,
            isolation=isolation,
            limits=limits,
            lease_seconds=lease_seconds,
        )
        done = 1
        if progress:
            progress(done, total)
        batches: list[BatchResult] = []
        if preparation.gate_passed:

            def advance(samples: int) -> None:
                nonlocal done
                done += samples
                if progress:
                    progress(done, total)

            seeds = list(range(request.seed, request.seed + request.samples))
            batches.append(
                run_sample_batch(
                    runtime,
                    request,
                    audit_id=audit_id,
                    job_id=f"{audit_id}-r0",
                    seeds=seeds,
                    now=now,
                    isolation=isolation,
                    limits=limits,
                    lease_seconds=lease_seconds,
                    progress=advance,
                    shards=None,  # one audit, its samples on every core
                )
            )
        return finalize_audit(
            runtime, request, audit_id=audit_id, preparation=preparation, batches=batches, now=now
        )
    except (EnclaveError, LedgerError) as exc:
        # a retryable ledger error is the ledger's own trouble: nothing to record it in
        if isinstance(exc, EnclaveError) or not exc.retryable:
            runtime.ledger.append(
                "audit.failed", audit_id, {"audit_id": audit_id, "reason": exc.code}
            )
        raise
