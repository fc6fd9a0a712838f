"""The shape of a release report's predicate (``docs/release-gate.md``), one definition
for the enclave that issues and verifies reports and for the analyst's side: the keys
and types of the predicate and of each specimen row, the label (and, in v2, reason)
vocabulary (``report_shape_problems``); then the selection digest recomputed from the
listed ids, and the totals, gate and (v2) disclosure bound recomputed from the rows
(``report_problems``). Version 2 (:data:`REPORT_TYPE`) is what ``regress`` issues; v1
(:data:`REPORT_TYPE_V1`) reports stay checkable.

``report_problems`` returns problems as ``location: rule`` (the first one is what a
verifier reports); a rule is a fixed sentence and never holds a value from the report.
The browser's port (``labextension/src/report/shape.ts``) gives the same list.
Certificates named by digest are not looked up here: ``replay-enclave verify REPORT``
does that with the home's certificates.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import rfc8785

__all__ = [
    "REPORT_BITS_PER_SPECIMEN",
    "REPORT_LABELS",
    "REPORT_REASONS",
    "REPORT_SUBJECT",
    "REPORT_TYPE",
    "REPORT_TYPE_V1",
    "report_disclosure",
    "report_problems",
    "report_row_holds",
    "report_selection_digest",
    "report_shape_problems",
]

REPORT_TYPE = "https://replay-enclave.dev/release-report/v2"
REPORT_TYPE_V1 = "https://replay-enclave.dev/release-report/v1"
REPORT_SUBJECT = "release-selection"
REPORT_LABELS = (
    "decision-changed",
    "layer-changed",
    "equivalent",
    "inconclusive",
    "not-auditable",
)
REPORT_REASONS = ("refused", "failed", "baseline-not-reproduced", "observable-only")
# a row states one of eight outcomes: four concluded labels, not-auditable with a reason
REPORT_BITS_PER_SPECIMEN = 3
_CERTIFIED_REASONS = ("baseline-not-reproduced", "observable-only")
KEYS_V1 = frozenset(
    {
        "selector",
        "selection_digest",
        "erased",
        "intervention",
        "baseline_code",
        "must_hold",
        "samples",
        "specimens",
        "totals",
        "gate",
        "issued_at",
        "issuer",
    }
)
KEYS = KEYS_V1 | {"disclosure"}
ROW_KEYS_V1 = frozenset(
    {
        "specimen",
        "audit",
        "certificate",
        "label",
        "reason",
        "layers_changed",
        "effects_sandboxed",
        "outside_control",
        "must_hold",
    }
)
ROW_KEYS = frozenset({"specimen", "audit", "certificate", "label", "reason", "sealed", "must_hold"})
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def report_selection_digest(specimens: list[str], erased: list[str]) -> str:
    """SHA-256 of the canonical JSON of the sorted ids: a report's subject digest."""
    body = rfc8785.dumps({"specimens": sorted(specimens), "erased": sorted(erased)})
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _sorted_unique(value: list[str]) -> bool:
    return value == sorted(set(value))


def _digest(value: object) -> bool:
    return isinstance(value, str) and bool(_DIGEST.match(value))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _row_problems_v1(at: str, row: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for key in ("specimen", "audit"):
        if not isinstance(row[key], str) or not row[key]:
            problems.append(f"{at}/{key}: must be a non-empty string")
    if row["certificate"] is not None and not _digest(row["certificate"]):
        problems.append(f"{at}/certificate: must be null or a sha256 digest")
    label = row["label"]
    if label not in REPORT_LABELS:
        problems.append(f"{at}/label: is not a label of release report v1")
    elif label == "not-auditable":
        if not isinstance(row["reason"], str) or not row["reason"]:
            problems.append(f"{at}/reason: a not-auditable row must give its reason")
    elif row["reason"] is not None:
        problems.append(f"{at}/reason: only a not-auditable row has a reason")
    elif row["certificate"] is None:
        problems.append(f"{at}/certificate: an audited row must name its certificate")
    for key in ("layers_changed", "effects_sandboxed", "outside_control"):
        if not _strings(row[key]):
            problems.append(f"{at}/{key}: must be a list of strings")
    return problems


def _row_problems_v2(at: str, row: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if not isinstance(row["specimen"], str) or not row["specimen"]:
        problems.append(f"{at}/specimen: must be a non-empty string")
    label, reason = row["label"], row["reason"]
    if label not in REPORT_LABELS:
        return [*problems, f"{at}/label: is not a label of release report v2"]
    if label == "not-auditable":
        if reason not in REPORT_REASONS:
            return [*problems, f"{at}/reason: is not a reason of release report v2"]
    elif reason is not None:
        return [*problems, f"{at}/reason: only a not-auditable row has a reason"]
    if reason == "refused":
        if row["audit"] is not None:
            problems.append(f"{at}/audit: a refused member has no audit")
    elif not isinstance(row["audit"], str) or not row["audit"]:
        problems.append(f"{at}/audit: must be a non-empty string")
    certified = label != "not-auditable" or reason in _CERTIFIED_REASONS
    if certified and not _digest(row["certificate"]):
        problems.append(f"{at}/certificate: this outcome names its certificate")
    elif not certified and row["certificate"] is not None:
        problems.append(f"{at}/certificate: a member with no certificate names none")
    sealed = row["sealed"]
    if sealed is not None and not (
        isinstance(sealed, str) and sealed.startswith("not-auditable-beyond ")
    ):
        problems.append(f"{at}/sealed: must be null or a sealed cut")
    return problems


def _row_problems(index: int, row: object, version: str) -> list[str]:
    at = f"/specimens/{index}"
    if not isinstance(row, Mapping):
        return [f"{at}: must be an object"]
    v2 = version == REPORT_TYPE
    if set(row) != (ROW_KEYS if v2 else ROW_KEYS_V1):
        return [f"{at}: must have exactly the release report {_name(version)} row keys"]
    problems = _row_problems_v2(at, row) if v2 else _row_problems_v1(at, row)
    if not isinstance(row["must_hold"], bool):
        problems.append(f"{at}/must_hold: must be a boolean")
    return problems


def _name(version: str) -> str:
    return "v2" if version == REPORT_TYPE else "v1"


def report_row_holds(row: Mapping[str, Any]) -> bool:
    """Equivalent (in a v1 row: and no load-bearing layer listed as changed); v2 rows
    have no ``layers_changed``: the label says it."""
    return row.get("label") == "equivalent" and not row.get("layers_changed")


def report_disclosure(rows: int) -> dict[str, int]:
    """A v2 report's bound: what the code under audit chooses in its ``rows``."""
    return {"bits_per_specimen": REPORT_BITS_PER_SPECIMEN, "bits": REPORT_BITS_PER_SPECIMEN * rows}


def _field_problems(p: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if not isinstance(p["selector"], Mapping):
        problems.append("/selector: must be an object")
    if not _digest(p["selection_digest"]):
        problems.append("/selection_digest: must be a sha256 digest")
    if not _strings(p["erased"]) or not _sorted_unique(p["erased"]):
        problems.append("/erased: must be a sorted list of distinct ids")
    intervention = p["intervention"]
    if not isinstance(intervention, Mapping) or intervention.get("strategy") not in (
        "CODE",
        "REVISION",
    ):
        problems.append("/intervention/strategy: must be CODE or REVISION")
    elif intervention["strategy"] == "CODE" and not _digest(intervention.get("digest")):
        problems.append("/intervention/digest: a code intervention names its sha256 digest")
    baseline = p["baseline_code"]
    if not _strings(baseline) or not all(map(_digest, baseline)) or not _sorted_unique(baseline):
        problems.append("/baseline_code: must be a sorted list of distinct sha256 digests")
    if not _strings(p["must_hold"]):
        problems.append("/must_hold: must be a list of tags")
    if not _count(p["samples"]) or p["samples"] < 1:
        problems.append("/samples: must be a positive integer")
    for key in ("issued_at", "issuer"):
        if not isinstance(p[key], str):
            problems.append(f"/{key}: must be a string")
    return problems


def report_shape_problems(predicate: object, version: str = REPORT_TYPE) -> list[str]:
    """Problems of a release report predicate's shape (keys, types, vocabularies) in
    ``version`` (the statement's predicate type), as ``location: rule``."""
    if version not in (REPORT_TYPE, REPORT_TYPE_V1):
        raise ValueError("not a release report version")
    if not isinstance(predicate, Mapping):
        return ["/: must be an object"]
    if set(predicate) != (KEYS if version == REPORT_TYPE else KEYS_V1):
        return [f"/: must have exactly the release report {_name(version)} keys"]
    problems = _field_problems(predicate)
    rows = predicate["specimens"]
    if not isinstance(rows, list):
        return [*problems, "/specimens: must be a list"]
    for index, row in enumerate(rows):
        problems.extend(_row_problems(index, row, version))
    return problems


def report_problems(
    predicate: object, subject_digest: object = None, version: str = REPORT_TYPE
) -> list[str]:
    """Problems of a release report predicate of ``version`` (the statement's predicate
    type; empty: it has the report's shape and its digest, totals, gate and bound follow
    from its rows). ``subject_digest`` is the statement subject's ``digest.sha256``; it
    must be the selection digest's hex."""
    problems = report_shape_problems(predicate, version)
    if problems:
        return problems
    assert isinstance(predicate, Mapping)
    rows = predicate["specimens"]
    ids = [row["specimen"] for row in rows]
    if ids != sorted(set(ids)):
        return ["/specimens: must be sorted by specimen, each once"]
    recomputed = report_selection_digest(ids, predicate["erased"])
    if predicate["selection_digest"] != recomputed:
        return ["/selection_digest: differs from the digest of the listed specimens"]
    if subject_digest != recomputed.split(":", 1)[1]:
        return ["/selection_digest: is not the statement subject's digest"]
    totals: dict[str, int] = {
        label: sum(r["label"] == label for r in rows) for label in REPORT_LABELS
    }
    totals["erased"] = len(predicate["erased"])
    totals["specimens"] = len(rows)
    given = predicate["totals"]
    if not isinstance(given, Mapping) or not all(map(_count, given.values())) or given != totals:
        return ["/totals: differ from the totals of the rows"]
    failing = sorted(r["specimen"] for r in rows if r["must_hold"] and not report_row_holds(r))
    gate = predicate["gate"]
    if not (isinstance(gate, Mapping) and isinstance(gate.get("passed"), bool)) or gate != {
        "passed": not failing,
        "failing": failing,
    }:
        return ["/gate: differs from the gate of the rows"]
    if version == REPORT_TYPE and not _bound_matches(predicate["disclosure"], len(rows)):
        return ["/disclosure: differs from the bound of the rows"]
    return []


def _bound_matches(given: object, rows: int) -> bool:
    expected = report_disclosure(rows)
    return (
        isinstance(given, Mapping) and all(map(_count, given.values())) and dict(given) == expected
    )
