"""The release report: one signed statement aggregating a regress run's certificates.

An in-toto Statement v1 (predicate type :data:`REPORT_TYPE`) in a DSSE envelope signed
with the certificates' own key. Its subject is the selection (``release-selection``,
digest = the selection digest), so a report over a library with a member quietly
dropped names a different subject. Per specimen it lists the certificate's envelope
digest (or the failure code), a label, the layers that changed, the effects served
from the record (sandboxed), the dependencies outside control, and whether the
specimen must hold; then totals and the gate.

Labels: ``decision-changed`` (influential with a flip), ``layer-changed`` (influential
without one), ``equivalent``, ``inconclusive``, ``not-auditable`` (with the reason: a
certificate's classification or the audit's failure code, after the specimen's sealed
``not-auditable-beyond <cut>`` class when it has one, ``docs/cuts.md``). The gate fails
when a must-hold specimen is anything but ``equivalent`` — a decision or a load-bearing
layer changed, the comparison was inconclusive, or the specimen could not be audited.

Nothing here sees plaintext: the inputs are certificates and ledger metadata.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger import canonical_json
from ledger.certificates import IN_TOTO_PAYLOAD_TYPE, sign_dsse

from ..keys import SigningKey

__all__ = [
    "REPORT_TYPE",
    "SpecimenResult",
    "build_report",
    "gate_failures",
    "label_of",
    "sign_report",
]

REPORT_TYPE = "https://replay-enclave.dev/release-report/v1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SUBJECT = "release-selection"
LABELS = ("decision-changed", "layer-changed", "equivalent", "inconclusive", "not-auditable")


@dataclass(frozen=True)
class SpecimenResult:
    specimen_id: str
    audit_id: str
    certificate: str | None  # envelope digest
    label: str
    reason: str | None
    layers_changed: tuple[str, ...]
    effects_sandboxed: tuple[str, ...]
    outside_control: tuple[str, ...]
    must_hold: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen": self.specimen_id,
            "audit": self.audit_id,
            "certificate": self.certificate,
            "label": self.label,
            "reason": self.reason,
            "layers_changed": list(self.layers_changed),
            "effects_sandboxed": list(self.effects_sandboxed),
            "outside_control": list(self.outside_control),
            "must_hold": self.must_hold,
        }


def label_of(
    predicate: Mapping[str, Any] | None, failure: str | None, *, sealed: str | None = None
) -> tuple[str, str | None]:
    """(label, reason) of one audit from its certificate predicate or failure code. A
    ``not-auditable`` row of a specimen sealed ``not-auditable-beyond <cut>`` (``sealed``,
    the manifest's ``auditability.class``) gives that class first in its reason."""
    label, reason = _label(predicate, failure)
    if label == "not-auditable" and sealed and sealed.startswith("not-auditable-beyond "):
        reason = f"{sealed}; {reason}"
    return label, reason


def _label(predicate: Mapping[str, Any] | None, failure: str | None) -> tuple[str, str | None]:
    if predicate is None:
        return "not-auditable", failure or "failed"
    classification = predicate.get("classification")
    effect = predicate.get("effect") or {}
    if classification == "influential":
        return ("decision-changed" if effect.get("flips") else "layer-changed"), None
    if classification in ("equivalent", "inconclusive"):
        return str(classification), None
    return "not-auditable", str(classification)


def layers_changed(predicate: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Load-bearing layers (not ignored by the request) that changed in any sample."""
    if predicate is None:
        return ()
    changes = (predicate.get("effect") or {}).get("layer_changes") or {}
    ignored = set((predicate.get("request", {}).get("tolerances") or {}).get("ignored") or ())
    # a count of samples (v2) or none / some / all of them (v3)
    return tuple(sorted(k for k, v in changes.items() if v not in (0, "none") and k not in ignored))


def outside_control(predicate: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What the replay could not hold to the record: the first unverifiable step and
    live-state fields read after departure (names from the specimen's own manifest)."""
    if predicate is None:
        return ()
    auditability = predicate.get("auditability") or {}
    out = [str(f) for f in auditability.get("live_state_fields") or ()]
    first = auditability.get("first_unverifiable_step")
    if first:
        out.insert(0, str(first))
    return tuple(out)


def holds(label: str, layers: Sequence[str]) -> bool:
    """Equivalent, and no load-bearing layer changed in any sample."""
    return label == "equivalent" and not layers


def gate_failures(results: Sequence[SpecimenResult]) -> list[str]:
    return sorted(
        r.specimen_id for r in results if r.must_hold and not holds(r.label, r.layers_changed)
    )


def build_report(
    *,
    selector: Mapping[str, Any],
    selection_digest: str,
    erased: Sequence[str],
    intervention: Mapping[str, Any],
    baseline_code: Sequence[str],
    must_hold: Sequence[str],
    samples: int,
    results: Sequence[SpecimenResult],
    issued_at: str,
    issuer: str,
) -> dict[str, Any]:
    """The report's in-toto Statement (unsigned)."""
    rows = sorted((r.to_dict() for r in results), key=lambda r: r["specimen"])
    totals = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    totals["erased"] = len(erased)
    totals["specimens"] = len(rows)
    failing = gate_failures(results)
    predicate = {
        "selector": dict(selector),
        "selection_digest": selection_digest,
        "erased": sorted(erased),
        "intervention": dict(intervention),
        "baseline_code": sorted(set(baseline_code)),
        "must_hold": sorted(set(must_hold)),
        "samples": samples,
        "specimens": rows,
        "totals": totals,
        "gate": {"passed": not failing, "failing": failing},
        "issued_at": issued_at,
        "issuer": issuer,
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT, "digest": {"sha256": selection_digest.split(":", 1)[1]}}],
        "predicateType": REPORT_TYPE,
        "predicate": predicate,
    }


def sign_report(statement: Mapping[str, Any], key: SigningKey) -> dict[str, Any]:
    return sign_dsse(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, key).to_dict()


def report_digest(envelope: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(envelope)).hexdigest()
