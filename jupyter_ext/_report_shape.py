"""The shape of a release report's predicate (``docs/release-gate.md``), checked on the
analyst's side without the enclave's code: the keys and types of the predicate and of
each specimen row, the label vocabulary, the selection digest recomputed from the listed
ids, and the totals and gate recomputed from the rows.

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

__all__ = ["LABELS", "REPORT_TYPE", "SUBJECT", "report_problems", "selection_digest"]

REPORT_TYPE = "https://replay-enclave.dev/release-report/v1"
SUBJECT = "release-selection"
LABELS = ("decision-changed", "layer-changed", "equivalent", "inconclusive", "not-auditable")
KEYS = frozenset(
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
ROW_KEYS = frozenset(
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
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def selection_digest(specimens: list[str], erased: list[str]) -> str:
    """SHA-256 of the canonical JSON of the sorted ids (``enclave.release``'s own)."""
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


def _row_problems(index: int, row: object) -> list[str]:
    at = f"/specimens/{index}"
    if not isinstance(row, Mapping):
        return [f"{at}: must be an object"]
    if set(row) != ROW_KEYS:
        return [f"{at}: must have exactly the release report v1 row keys"]
    problems: list[str] = []
    for key in ("specimen", "audit"):
        if not isinstance(row[key], str) or not row[key]:
            problems.append(f"{at}/{key}: must be a non-empty string")
    if row["certificate"] is not None and not _digest(row["certificate"]):
        problems.append(f"{at}/certificate: must be null or a sha256 digest")
    label = row["label"]
    if label not in LABELS:
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
    if not isinstance(row["must_hold"], bool):
        problems.append(f"{at}/must_hold: must be a boolean")
    return problems


def _holds(row: Mapping[str, Any]) -> bool:
    return row["label"] == "equivalent" and not row["layers_changed"]


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


def report_problems(predicate: object, subject_digest: object = None) -> list[str]:
    """Problems of a release report predicate (empty: it has the report's shape and its
    digest, totals and gate follow from its rows). ``subject_digest`` is the statement
    subject's ``digest.sha256``; it must be the selection digest's hex."""
    if not isinstance(predicate, Mapping):
        return ["/: must be an object"]
    if set(predicate) != KEYS:
        return ["/: must have exactly the release report v1 keys"]
    problems = _field_problems(predicate)
    rows = predicate["specimens"]
    if not isinstance(rows, list):
        return [*problems, "/specimens: must be a list"]
    for index, row in enumerate(rows):
        problems.extend(_row_problems(index, row))
    if problems:
        return problems
    ids = [row["specimen"] for row in rows]
    if ids != sorted(set(ids)):
        return ["/specimens: must be sorted by specimen, each once"]
    recomputed = selection_digest(ids, predicate["erased"])
    if predicate["selection_digest"] != recomputed:
        return ["/selection_digest: differs from the digest of the listed specimens"]
    if subject_digest != recomputed.split(":", 1)[1]:
        return ["/selection_digest: is not the statement subject's digest"]
    totals: dict[str, int] = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    totals["erased"] = len(predicate["erased"])
    totals["specimens"] = len(rows)
    given = predicate["totals"]
    if not isinstance(given, Mapping) or not all(map(_count, given.values())) or given != totals:
        return ["/totals: differ from the totals of the rows"]
    failing = sorted(r["specimen"] for r in rows if r["must_hold"] and not _holds(r))
    gate = predicate["gate"]
    if not (isinstance(gate, Mapping) and isinstance(gate.get("passed"), bool)) or gate != {
        "passed": not failing,
        "failing": failing,
    }:
        return ["/gate: differs from the gate of the rows"]
    return []
