"""What an audit's stages produce on the supervisor side: the preparation (baseline gate
and proven intervention) and the audit's outcome. Metadata and bounded numbers only,
like ``_results`` (which the worker shares); these two carry the verdict's typed
figures (``_reported``), which the worker never loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ledger.certificates import AuditLabel, envelope_finding, failed_finding

from ._reported import Auditability, Effect, Placebo

__all__ = ["AuditOutcome", "Preparation"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Preparation:
    """The audit job's result: the proven intervention and the baseline gate."""

    audit_id: str
    specimen_id: str
    tenant_id: str
    agent_name: str
    manifest_digest: str
    target_call_id: str
    declared_changes: tuple[str, ...]
    actual_changes: tuple[str, ...]
    unchanged_digest_before: str
    unchanged_digest_after: str
    original_digest: str
    counterfactual_digest: str
    baseline: dict[str, Any] | None  # {"reproduced": bool, "layers": {...}}
    gate_auditability: Auditability
    environment: dict[str, Any]
    grant: dict[str, Any]
    failure: str | None = None  # contamination reason or the gate run's failure code
    failure_detail: str | None = None
    # sizes of the specimen's own vocabulary (``VocabularySize``): the disclosure bound's
    # inputs, fixed by the supervisor; absent in rows stored before it was recorded
    vocabulary: dict[str, int] | None = None
    # per boundary name: did its declared substitute reproduce the recorded responses?
    # {"checked": n, "faithful": bool}; None where not checked (rows stored before)
    substitute_fidelity: dict[str, dict[str, Any]] | None = None
    # the recorded seed's own paired sample (``SampleSummary.to_dict``), run here so the
    # certificate reports its counterfactual even when it is not among the sampled seeds
    recorded_sample: dict[str, Any] | None = None
    # the specimen's recorded seed: its counterfactual is reported apart from the
    # population; None in rows stored before it was recorded
    recorded_seed: int | None = None
    # the cut every run started from (``_cuts.cut_summary``): None for a full replay
    cut: dict[str, Any] | None = None
    # what governed inference asked here (``_inference_stage.stage_usage``): counts only
    inference: dict[str, Any] | None = None

    @property
    def gate_passed(self) -> bool:
        return self.failure is None and bool(self.baseline and self.baseline["reproduced"])

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["gate_auditability"] = self.gate_auditability.to_json()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preparation:
        values = dict(data)
        for key in ("declared_changes", "actual_changes"):
            values[key] = tuple(values[key])
        values["gate_auditability"] = Auditability.from_json(values["gate_auditability"])
        return cls(**values)


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditOutcome:
    """What an audit produced. Metadata and bounded numbers only; ``disclosure`` is the
    certificate's disclosure bound (``None`` when no certificate was issued)."""

    audit_id: str
    specimen_id: str
    classification: AuditLabel
    auditability: Auditability
    effect: Effect | None = None
    placebo: Placebo | None = None
    failure: str | None = None
    failure_detail: str | None = None
    certificate_path: Path | None = None
    ledger_index: int
    envelope: dict[str, Any] | None = None
    disclosure: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "audit_id": self.audit_id,
            "specimen_id": self.specimen_id,
            "classification": self.classification.value,
            "auditability": self.auditability.to_json(),
            "effect": None if self.effect is None else self.effect.to_json(),
            "placebo": None if self.placebo is None else self.placebo.to_json(),
            "failure": self.failure,
            "failure_detail": self.failure_detail,
            "certificate_path": None
            if self.certificate_path is None
            else str(self.certificate_path),
            "ledger_index": self.ledger_index,
            "disclosure": self.disclosure,
            "finding": self.finding,
        }

    @property
    def finding(self) -> str:
        """The certificate's finding, re-derived from its signed predicate (checked
        first); an audit that failed has the sentence saying nothing was established."""
        if self.envelope is None:
            return failed_finding(self.failure or AuditLabel.FAILED.value)
        return envelope_finding(self.envelope)
