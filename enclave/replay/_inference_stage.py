"""Governed inference in an audit's stages: a broker per stage, its counts kept.

Each stage that replays (preparation, every sample batch) asks through its own
``InferenceBroker`` over the audit's own record; the caps are the audit's: the
preparation may spend them, and each sample batch its seeds' share of what the
preparation left (so batches the service runs at once cannot together pass a cap).
What a stage asked is metadata — counts and tokens per arm, never content — kept with
the stage's result and in the ledger (``inference.used``), and summed into the
certificate's ``inference`` section.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._runtime import Runtime
from ._broker import InferenceBroker, Tally
from ._compare import compare_layers, recorded_layers
from ._endpoints import endpoints_of
from ._inference_record import InferenceRecord
from ._load import OpenedSpecimen
from ._model import RunResult, Trajectory
from ._request import AuditRequest

__all__ = [
    "ARMS",
    "USED",
    "batch_allowance",
    "governed",
    "inference_broker",
    "inference_section",
    "reasked_baseline",
    "stage_usage",
]

ARMS = ("preparation", "baseline", "intervened", "placebo")
USED = "inference.used"
# what a re-asked baseline must reproduce: the typed decision and the score, not the words
REASKED_LAYERS = ("decision", "score")


def inference_broker(
    runtime: Runtime,
    request: AuditRequest,
    opened: OpenedSpecimen,
    *,
    audit_id: str,
    seeds: Iterable[int],
    batch: bool = False,
) -> InferenceBroker | None:
    """The stage's broker, or None when the request authorises no inference. The
    preparation starts from nothing spent; a sample ``batch`` from what the preparation
    spent (the ledger's ``inference.used``), with an allowance of its seeds' share of
    what is left under the tightest grant's caps: batches run at once, or one after
    another, spend together at most what the caps leave."""
    if not request.inference:
        return None
    seeds = frozenset(int(s) for s in seeds)
    spent = _spent_before(runtime, audit_id) if batch else None
    allowance = batch_allowance(request, spent, len(seeds)) if spent is not None else None
    return InferenceBroker(
        grants=request.inference,
        endpoints=endpoints_of(runtime.home.config),
        trajectory=opened.trajectory,
        record=InferenceRecord(
            runtime.payloads,
            tenant_id=opened.record.tenant_id,
            specimen_id=request.specimen_id,
            key=opened.record_key,
        ),
        seeds=seeds,
        spent=spent,
        allowance=allowance,
    )


def batch_allowance(
    request: AuditRequest, spent: Mapping[str, int | float], seeds: int
) -> dict[str, int | float]:
    """A batch's allowance: its seeds' share of what the preparation left under the
    tightest cap of each kind (whole answers and tokens, rounded down)."""
    caps = [grant.caps for grant in request.inference]
    left = {
        "calls": min(c.calls for c in caps) - spent["calls"],
        "input_tokens": min(c.input_tokens for c in caps) - spent["input_tokens"],
        "output_tokens": min(c.output_tokens for c in caps) - spent["output_tokens"],
        "seconds": min(c.wall_seconds for c in caps) - spent["seconds"],
    }
    share = {name: max(0.0, value) * seeds / request.samples for name, value in left.items()}
    return {
        name: (value if name == "seconds" else math.floor(value)) for name, value in share.items()
    }


def _spent_before(runtime: Runtime, audit_id: str) -> dict[str, int | float]:
    """What the audit's preparation spent (the batches' shares are their own)."""
    spent: dict[str, int | float] = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
    seconds = 0.0
    for entry in runtime.ledger.entries(kind=USED, subject=audit_id):
        if entry.body.get("stage") != "preparation":
            continue
        for tally in entry.body["arms"].values():
            spent["calls"] += int(tally["asked"]) + int(tally["from_record"])
            spent["input_tokens"] += int(tally["input_tokens"])
            spent["output_tokens"] += int(tally["output_tokens"])
        seconds += float(entry.body["seconds"])
    return {**spent, "seconds": seconds}


def stage_usage(
    runtime: Runtime,
    broker: InferenceBroker | None,
    *,
    audit_id: str,
    job_id: str,
    stage: str,
) -> dict[str, Any] | None:
    """What the stage asked, per arm (appended to the ledger as ``inference.used``), or
    None without a broker."""
    if broker is None:
        return None
    broker.close()
    arms = {arm: tally.to_dict() for arm, tally in broker.arms.items()}
    usage = {"stage": stage, "arms": arms, "seconds": round(broker.stage_seconds, 3)}
    runtime.ledger.append(USED, audit_id, {"audit_id": audit_id, "job_id": job_id, **usage})
    return usage


def inference_section(
    request: AuditRequest,
    preparation: Mapping[str, Any] | None,
    batches: Sequence[Mapping[str, Any] | None],
) -> dict[str, Any] | None:
    """The certificate's ``inference``: the grants, whether samples were paired by a
    provider seed, and per arm what was asked (the preparation's runs as one arm)."""
    if not request.inference:
        return None
    totals = {arm: Tally() for arm in ARMS}
    if preparation:
        for tally in preparation["arms"].values():
            totals["preparation"].add(tally)
    for usage in batches:
        if usage:
            for arm, tally in usage["arms"].items():
                totals[arm].add(tally)
    return {
        "grants": [g.to_dict() for g in request.inference],
        "seeded": all(g.seeded for g in request.inference),
        "arms": {arm: tally.to_dict() for arm, tally in totals.items()},
    }


def governed(request: AuditRequest) -> list[str]:
    """The boundaries whose unrecorded calls the worker asks of the supervisor."""
    return [grant.boundary for grant in request.inference]


def reasked_baseline(
    trajectory: Trajectory,
    reasked: RunResult,
    request: AuditRequest,
    layers: dict[str, Any],
) -> dict[str, Any]:
    """The baseline gate, with the re-asked run's typed decision and score in place of
    the served run's: the model asked again must reach the recorded decision (its words
    may differ), or the baseline is not reproduced."""
    assert reasked.layers is not None
    again = compare_layers(recorded_layers(trajectory.steps), reasked.layers, request.tolerances)
    for name in REASKED_LAYERS:
        if name in again:
            layers = {**layers, name: again[name]}
    return {"reproduced": all(v["ok"] for v in layers.values()), "layers": layers}
