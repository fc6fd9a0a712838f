"""The release report: one signed statement aggregating a regress run's certificates.

An in-toto Statement v1 (predicate type :data:`REPORT_TYPE`, release report v2) in a
DSSE envelope signed with the certificates' own key. Its subject is the selection
(``release-selection``, digest = the selection digest), so a report over a library with
a member quietly dropped names a different subject. Per specimen it lists the
certificate's envelope digest, one outcome, the specimen's sealed cut (when it has one)
and whether the specimen must hold; then totals, the gate and the report's disclosure
bound.

Outcomes: ``decision-changed`` (influential with a flip), ``layer-changed`` (the
decision held but a load-bearing layer changed: influential without a flip, or
equivalent with a layer that changed), ``equivalent``, ``inconclusive``, and
``not-auditable`` with one reason of :data:`REASONS` — ``refused`` at submission,
``failed`` (the audit ended without a certificate), or the certificate's own
``baseline-not-reproduced`` / ``observable-only``. The gate fails when a must-hold
specimen is anything but ``equivalent``.

Tight by construction: a row's outcome is one of :data:`OUTCOMES` (8 values), so the
code under audit can choose at most :data:`BITS_PER_SPECIMEN` = 3 bits per specimen; the
totals and the gate follow from the rows. Everything else in a row is fixed before any
replay (specimen, audit id, sealed cut, must-hold) or names a certificate that states
and is charged its own bound. Which layers changed, the effects served from the record
and what stayed outside control are in each certificate, not repeated here (v1 listed
them, several bits per name). v1 reports stay verifiable.

Nothing here sees plaintext: the inputs are certificates and ledger metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger import canonical_json
from ledger.certificates import (
    IN_TOTO_PAYLOAD_TYPE,
    REPORT_BITS_PER_SPECIMEN,
    REPORT_LABELS,
    REPORT_REASONS,
    REPORT_SUBJECT,
    REPORT_TYPE,
    REPORT_TYPE_V1,
    Signer,
    report_disclosure,
    report_outcome,
    sign_dsse,
)

__all__ = [
    "BITS_PER_SPECIMEN",
    "LABELS",
    "REASONS",
    "REPORT_TYPE",
    "REPORT_TYPE_V1",
    "SpecimenResult",
    "build_report",
    "gate_failures",
    "label_of",
    "sign_report",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SUBJECT = REPORT_SUBJECT
# the vocabularies are the verifier's (``ledger.certificates``), which every side checks
LABELS, REASONS = REPORT_LABELS, REPORT_REASONS
# every (label, reason) a row can state: the four concluded labels, and not-auditable
# with each reason
OUTCOMES = (*((label, None) for label in LABELS[:-1]), *(("not-auditable", r) for r in REASONS))
BITS_PER_SPECIMEN = REPORT_BITS_PER_SPECIMEN
assert 2**BITS_PER_SPECIMEN == len(OUTCOMES)
# a row's outcome from its certificate (or its absence), as every verifier derives it
label_of = report_outcome


@dataclass(frozen=True)
class SpecimenResult:
    specimen_id: str
    audit_id: str | None  # None: refused at submission, no audit exists
    certificate: str | None  # envelope digest
    label: str
    reason: str | None
    sealed: str | None  # ``not-auditable-beyond <cut>``, fixed at capture
    must_hold: bool

    def __post_init__(self) -> None:
        if (self.label, self.reason) not in OUTCOMES:
            raise ValueError("not an outcome of a release report row")

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen": self.specimen_id,
            "audit": self.audit_id,
            "certificate": self.certificate,
            "label": self.label,
            "reason": self.reason,
            "sealed": self.sealed,
            "must_hold": self.must_hold,
        }


def sealed_cut(auditability_class: str | None) -> str | None:
    """The manifest's sealed class when it is a cut (``docs/cuts.md``), else None."""
    cut = auditability_class or ""
    return cut if cut.startswith("not-auditable-beyond ") else None


def gate_failures(results: Sequence[SpecimenResult]) -> list[str]:
    return sorted(r.specimen_id for r in results if r.must_hold and r.label != "equivalent")


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
        "disclosure": report_disclosure(len(rows)),
        "issued_at": issued_at,
        "issuer": issuer,
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT, "digest": {"sha256": selection_digest.split(":", 1)[1]}}],
        "predicateType": REPORT_TYPE,
        "predicate": predicate,
    }


def sign_report(statement: Mapping[str, Any], key: Signer) -> dict[str, Any]:
    return sign_dsse(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, key).to_dict()
