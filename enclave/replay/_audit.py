"""The supervisor's side of an audit: everything between a frozen request and a
certificate. It holds the grant and the plaintext; agent code runs only in the worker.

1. Record the request in the ledger (who, purpose, what).
2. Open the specimen: single-use grant -> data key -> decrypt -> trajectory.
3. Apply the intervention to the record and prove it changed only what it declares.
4. Start one isolated worker; send it the baseline, intervened and placebo trajectories.
5. Baseline gate on the recorded seed: every load-bearing layer within tolerance, or
   the audit ends "baseline-not-reproduced" and nothing is compared.
6. N paired samples on seeds S..S+N-1: baseline, intervened and placebo on each seed.
7. Decide (``_verdict``), sign the certificate, append it to the ledger.

Any contamination of the worker fails the audit with its reason code and no
certificate of influence is issued.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .._errors import EnclaveError
from .._runtime import Runtime
from ..capture import load_agent
from ..sandbox import Contaminated, Sandbox, SandboxLimits
from ._certificates import issue_certificate
from ._compare import compare_layers, recorded_layers
from ._interventions import apply_intervention, placebo_of
from ._load import open_specimen
from ._model import RunResult
from ._request import AuditRequest
from ._verdict import BASELINE_NOT_REPRODUCED, FAILED, Verdict, decide

__all__ = ["AuditOutcome", "run_audit", "WORKER_HANDLER"]

WORKER_HANDLER = "enclave.replay._worker_entry:handle"
# Our own modules, imported before the tripwire arms; agent modules load after it.
WORKER_PRELOAD = ("enclave.replay._worker_entry",)
DEFAULT_LEASE_SECONDS = 300
BATCH_RUNS = 600

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AuditOutcome:
    """What an audit produced. Metadata and bounded numbers only."""

    audit_id: str
    specimen_id: str
    classification: str
    auditability: dict[str, Any]
    effect: dict[str, Any] | None
    placebo: dict[str, Any] | None
    failure: str | None
    failure_detail: str | None
    certificate_path: Path | None
    ledger_index: int

    def to_dict(self) -> dict[str, Any]:
        effect = None
        if self.effect is not None:
            effect = {k: v for k, v in self.effect.items() if k != "deltas"}
        return {
            "audit_id": self.audit_id,
            "specimen_id": self.specimen_id,
            "classification": self.classification,
            "auditability": self.auditability,
            "effect": effect,
            "placebo": self.placebo,
            "failure": self.failure,
            "failure_detail": self.failure_detail,
            "certificate_path": None if self.certificate_path is None else str(self.certificate_path),
            "ledger_index": self.ledger_index,
        }


_NOT_ESTABLISHED = [
    "generalisation beyond this specimen: the result concerns this recorded run only",
    "the identity of provider-internal components behind a resolved model or service",
    "what live systems would answer today: every dependency was served from the record",
]


def _isolation_layers(environment: dict[str, Any]) -> list[str]:
    layers = [environment.get("isolation", "none")]
    for key in ("network_namespace", "pid_namespace", "filesystem_readonly", "audit_hook", "seccomp", "wall_clock_kill"):
        if environment.get(key):
            layers.append(key)
    if environment.get("rlimits"):
        layers.append("rlimits")
    return layers


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
    audit_id = audit_id or f"au-{secrets.token_hex(8)}"
    ledger = runtime.ledger
    # 1.
    ledger.append(
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
        },
    )
    try:
        return _run(runtime, request, audit_id=audit_id, now=now, progress=progress,
                    isolation=isolation, limits=limits, lease_seconds=lease_seconds)
    except EnclaveError as exc:
        ledger.append("audit.failed", audit_id, {"audit_id": audit_id, "reason": exc.code})
        raise


def _run(
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
    ledger = runtime.ledger
    # 2.
    opened = open_specimen(runtime, request.specimen_id, job_id=audit_id, lease_seconds=lease_seconds, now=now)
    ledger.append(
        "grant.used",
        audit_id,
        {"audit_id": audit_id, "specimen_id": request.specimen_id, "provider": opened.grant_provider,
         "accessor": opened.grant_accessor},
    )
    record, trajectory = opened.record, opened.trajectory
    agent = load_agent(record.agent_name)
    digester = runtime.digests.for_tenant(record.tenant_id)
    # 3.
    applied = apply_intervention(trajectory, request.intervention, agent=agent, digester=digester)
    placebo = placebo_of(trajectory, applied)
    reference = recorded_layers(trajectory.steps)
    seeds = list(range(request.seed, request.seed + request.samples))
    total = 1 + 3 * len(seeds)
    # 4.
    sandbox = Sandbox(scratch_root=runtime.home.root / "scratch", limits=limits, isolation=isolation)
    environment = sandbox.environment
    results: dict[str, list[RunResult]] = {"baseline": [], "intervened": [], "placebo": []}
    gate: RunResult | None = None
    failure: tuple[str, str] | None = None
    try:
        with sandbox.start(WORKER_HANDLER, preload=WORKER_PRELOAD) as worker:
            worker.call(
                {
                    "op": "load",
                    "agent": record.agent_name,
                    "trajectories": {
                        "baseline": trajectory.to_dict(),
                        "intervened": applied.trajectory.to_dict(),
                        "placebo": placebo.to_dict(),
                    },
                    "audit_time": now.isoformat(),
                }
            )
            # 5.
            reply = worker.call({"op": "run", "runs": [{"variant": "baseline", "seed": trajectory.seed}]})
            gate = RunResult.from_dict(reply["results"][0])
            done = 1
            if progress:
                progress(done, total)
            gate_layers = None if gate.layers is None else compare_layers(reference, gate.layers, request.tolerances)
            if gate_layers is not None and all(v["ok"] for v in gate_layers.values()):
                # 6.
                runs = [{"variant": v, "seed": s} for s in seeds for v in ("baseline", "intervened", "placebo")]
                for start in range(0, len(runs), BATCH_RUNS):
                    batch = runs[start : start + BATCH_RUNS]
                    for item in worker.call({"op": "run", "runs": batch})["results"]:
                        run = RunResult.from_dict(item)
                        results[run.variant].append(run)
                    done += len(batch)
                    if progress:
                        progress(done, total)
    except Contaminated as exc:
        failure = (exc.reason, "the replay worker was contaminated")
    # 7.
    baseline_summary = None
    if gate is not None and gate.layers is not None:
        layers = compare_layers(reference, gate.layers, request.tolerances)
        baseline_summary = {"reproduced": all(v["ok"] for v in layers.values()), "layers": layers}
    elif gate is not None:
        baseline_summary = {"reproduced": False, "layers": {}}
    if failure is not None:
        verdict = Verdict(FAILED, {"class": "observable-only", "first_unverifiable_step": None,
                                   "live_state_fields": [], "reason": "audit failed"}, None, None, *failure)
    elif gate is not None and gate.failure is not None:
        verdict = Verdict(FAILED, {"class": "observable-only", "first_unverifiable_step": None,
                                   "live_state_fields": [], "reason": "audit failed"}, None, None,
                          gate.failure, "baseline run on the recorded seed")
    elif baseline_summary is None or not baseline_summary["reproduced"]:
        from ._verdict import auditability_of

        verdict = Verdict(BASELINE_NOT_REPRODUCED, auditability_of([gate] if gate else []), None, None)
    else:
        verdict = decide(
            baseline=results["baseline"],
            intervened=results["intervened"],
            placebo=results["placebo"],
            recorded_decision=reference["decision"],
            tolerances=request.tolerances,
        )
    if verdict.classification == FAILED:
        position = ledger.append(
            "audit.failed",
            audit_id,
            {"audit_id": audit_id, "reason": verdict.failure, "detail": verdict.failure_detail},
        )
        return AuditOutcome(audit_id, request.specimen_id, FAILED, verdict.auditability, None, verdict.placebo,
                            verdict.failure, verdict.failure_detail, None, position.index)

    specimen_entry = ledger.entries(kind="specimen.sealed", subject=request.specimen_id)[0]
    iv = request.intervention
    predicate: dict[str, Any] = {
        "request": request.to_predicate(call_id=applied.target_call_id, digester=digester),
        "baseline": baseline_summary,
        "intervention": {
            "strategy": iv.strategy.value.upper(),
            "target": {"call_id": applied.target_call_id, "field": iv.field or "#identity"},
            "declared_changes": list(applied.declared_changes),
            "actual_changes": list(applied.actual_changes),
            "unchanged_digest_before": applied.unchanged_digest_before,
            "unchanged_digest_after": applied.unchanged_digest_after,
            "unchanged_digest_equal": applied.unchanged_digest_equal,
        },
        "samples": None if verdict.effect is None and not results["baseline"] else {
            "count": request.samples, "seed": request.seed,
            "seeds": f"{request.seed}..{request.seed + request.samples - 1}",
        },
        "effect": verdict.effect,
        "placebo": verdict.placebo,
        "classification": verdict.classification,
        "auditability": verdict.auditability,
        "not_established": _not_established(verdict),
        "environment": {"isolation_layers": _isolation_layers(environment), **environment},
        "lineage": _lineage(request, applied, verdict, audit_id, results),
        "grant": {"provider": opened.grant_provider, "accessor": opened.grant_accessor, "ttl_seconds": lease_seconds},
        "ledger": {"specimen_entry_index": specimen_entry.index, "specimen_entry_hash": specimen_entry.entry_hash},
        "issued_at": now.isoformat().replace("+00:00", "Z"),
    }
    _envelope, path, index = issue_certificate(
        runtime, audit_id=audit_id, specimen_id=request.specimen_id,
        manifest_digest=record.manifest_digest, predicate=predicate,
    )
    return AuditOutcome(audit_id, request.specimen_id, verdict.classification, verdict.auditability,
                        verdict.effect, verdict.placebo, None, None, path, index)


def _not_established(verdict: Verdict) -> list[str]:
    items = list(_NOT_ESTABLISHED)
    if verdict.classification == "observable-only":
        items.insert(0, "whether the intervened input was causal: the branch depends on live state or "
                        "unverifiable effects, so no counterfactual conclusion is drawn either way")
    if verdict.classification == BASELINE_NOT_REPRODUCED:
        items.insert(0, "any effect of the intervention: the untouched baseline did not reproduce")
    if verdict.classification == "no-measurable-influence":
        items.insert(0, "absence of influence below the declared score tolerance or on other seeds")
    return items


def _lineage(request: AuditRequest, applied: Any, verdict: Verdict, audit_id: str,
             results: dict[str, list[RunResult]]) -> list[dict[str, Any]]:
    chain: list[dict[str, Any]] = []
    if request.policy:
        chain.append({"kind": "policy", "id": request.policy[0], "version": request.policy[1]})
    chain += [
        {"kind": "intervention", "strategy": request.intervention.strategy.value,
         "target": applied.target_call_id, "digest": applied.counterfactual_digest},
        {"kind": "evidence", "call_id": applied.target_call_id,
         "original_digest": applied.original_digest, "counterfactual_digest": applied.counterfactual_digest},
        {"kind": "replays", "job": audit_id, "baseline": len(results["baseline"]) + 1,
         "intervened": len(results["intervened"]), "placebo": len(results["placebo"])},
    ]
    if verdict.effect is not None:
        chain.append({"kind": "scores", "mean_delta": verdict.effect["mean_delta"],
                      "flip_rate": verdict.effect["flip_rate"]})
    chain.append({"kind": "classification", "value": verdict.classification})
    return chain
