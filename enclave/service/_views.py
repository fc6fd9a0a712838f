"""Metadata views of specimens, as the REST API returns them. Never payload content:
identities, digests (keyed), classifications, retention, counts and times."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger import SpecimenRecord, SpecimenSummary

from ..governance import Resource

__all__ = ["expected_auditability", "specimen_detail", "specimen_resource"]

ADMISSIBLE = "counterfactual-admissible"
OBSERVABLE_ONLY = "observable-only"


def specimen_resource(record: SpecimenRecord | SpecimenSummary) -> Resource:
    return Resource(
        kind="Specimen",
        id=record.specimen_id,
        tenant=record.tenant_id,
        classification=record.highest_classification.value,
        legal_hold=record.legal_hold,
    )


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def expected_auditability(record: SpecimenRecord, *, now: datetime) -> str:
    """Before any audit: observable-only as soon as one recorded effect cannot be
    re-verified now (not re-verifiable, its token expired, or it returned live-state
    fields); otherwise counterfactual-admissible. An audit decides for its branch."""
    for step in record.steps:
        effect = step.effect
        if effect is None:
            continue
        expires = _parse(effect.token_expires_at) if effect.token_expires_at else None
        # an unreadable expiry, or one without a zone, reads as expired (fail closed)
        expired = effect.token_expires_at is not None and (
            expires is None or expires.tzinfo is None or expires <= now
        )
        if not effect.reverifiable or expired or effect.live_state_fields:
            return OBSERVABLE_ONLY
    return ADMISSIBLE


def specimen_detail(record: SpecimenRecord) -> dict[str, Any]:
    """The summary a listing shows for this specimen, then what only the detail shows."""
    calls = []
    for step in record.manifest.get("steps", []):
        schema = step.get("schema") or {}
        calls.append(
            {
                "call_id": step["call_id"],
                "kind": step["kind"],
                "name": step["name"],
                "agent": step["agent"],
                "alias": step.get("alias"),
                "resolved": step.get("resolved"),
                "schema_id": schema.get("id"),
                "schema_version": schema.get("version"),
                "fields": [
                    {
                        "side": f["side"],
                        "path": f["path"],
                        "classification": f["classification"],
                        "retention": f["retention"],
                        # keyed per specimen from manifest v3 (docs/digests.md); an older
                        # specimen's tenant-wide digest compares across specimens: not shown
                        "digest": f.get("digest")
                        if record.manifest.get("manifest_version", 0) >= 3
                        else None,
                    }
                    for f in step.get("fields", [])
                ],
            }
        )
    revisions = record.manifest.get("adapter", {}).get("revisions", {}) or {}
    return {
        **SpecimenSummary.of(record).to_dict(),
        "calls": calls,
        "revisions": {str(k): [str(v) for v in vs] for k, vs in revisions.items()},
        "strategies": list(record.adapter.strategies),
    }
