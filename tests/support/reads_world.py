"""Synthetic specimens for the read-path tests and the read-load benchmark.

Sealed straight through ``Ledger.seal_specimen`` (the ledger's own front door), so a
listing can be tested at thousands of rows without capturing through the sandbox. Each
specimen is metadata only: a context step, a model step and, when asked, effect steps
with the given token facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger import (
    AdapterInfo,
    Classification,
    EffectInfo,
    FieldRecord,
    Ledger,
    Retention,
    SpecimenRecord,
    StepKind,
    StepRecord,
    canonical_digest,
)

__all__ = ["CLASSES", "synthetic_specimen", "seal_many"]

CLASSES = (
    Classification.PUBLIC,
    Classification.INTERNAL,
    Classification.CONFIDENTIAL,
    Classification.RESTRICTED,
)
_DIGEST = "hmac-sha256:" + "1" * 64


def _step(seq: int, kind: StepKind, effect: EffectInfo | None = None) -> StepRecord:
    return StepRecord(
        seq=seq,
        agent="agent",
        call_id=f"c{seq}",
        kind=kind,
        name=f"call-{seq}",
        alias=None,
        resolved=f"svc@{seq}",
        schema_id=None,
        schema_version=None,
        request_digest=_DIGEST,
        response_digest=_DIGEST,
        valid_time="2025-03-01T10:00:00Z",
        observed_time="2025-03-01T10:00:00Z",
        effect=effect,
    )


def synthetic_specimen(
    specimen_id: str,
    *,
    tenant_id: str = "acme",
    agent_name: str = "procurement",
    classification: Classification = Classification.INTERNAL,
    effects: Sequence[EffectInfo] = (),
    sealed_at: str = "2025-03-01T10:00:05Z",
    legal_hold: bool = False,
) -> SpecimenRecord:
    steps = [_step(1, StepKind.CONTEXT), _step(2, StepKind.MODEL)]
    steps += [_step(3 + i, StepKind.EFFECT, effect) for i, effect in enumerate(effects)]
    manifest: dict[str, Any] = {  # the shape the detail view reads, no content
        "run": specimen_id,
        "steps": [
            {
                "seq": s.seq,
                "call_id": s.call_id,
                "kind": s.kind.value,
                "name": s.name,
                "agent": s.agent,
                "resolved": s.resolved,
                "fields": [
                    {
                        "side": "response",
                        "path": "/score",
                        "classification": classification.value,
                        "retention": "digest",
                        "digest": _DIGEST,
                    }
                ]
                if s.seq == 2
                else [],
            }
            for s in steps
        ],
    }
    return SpecimenRecord(
        specimen_id=specimen_id,
        tenant_id=tenant_id,
        agent_name=agent_name,
        agent_version="1.0",
        manifest=manifest,
        manifest_digest=canonical_digest(manifest),
        adapter=AdapterInfo(
            name="synthetic", version="1", strategies=("NULLIFY",), source_ref="synthetic@1"
        ),
        highest_classification=classification,
        retention_class="standard-90d",
        sealed_at=sealed_at,
        steps=tuple(steps),
        fields=(
            FieldRecord(
                seq=2,
                side="response",
                path="/score",
                classification=classification,
                retention=Retention.DIGEST_ONLY,
                keyed_digest=_DIGEST,
                payload_ref=None,
            ),
        ),
        legal_hold=legal_hold,
    )


def seal_many(ledger: Ledger, count: int, *, prefix: str = "sp-syn", start: int = 0) -> list[str]:
    """``count`` specimens over two agents, four classifications and three effect shapes
    (none; re-verifiable without expiry; not re-verifiable)."""
    ids = []
    for i in range(start, start + count):
        effects: tuple[EffectInfo, ...] = ()
        if i % 3 == 1:
            effects = (EffectInfo("tok", None, True),)
        elif i % 3 == 2:
            effects = (EffectInfo("tok", "2025-03-01T10:00:35Z", False, ("lock_id",)),)
        record = synthetic_specimen(
            f"{prefix}-{i:06d}",
            agent_name="procurement" if i % 2 else "claims",
            classification=CLASSES[i % 4],
            effects=effects,
        )
        ledger.seal_specimen(record)
        ids.append(record.specimen_id)
    return ids
