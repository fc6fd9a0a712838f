"""JSON Schema for the v1 certificate predicate, plus the rules a schema cannot say.

Predicate type ``https://replay-enclave.dev/certificate/v1``: no longer issued, still
verified (``docs/certificate-v2.md``); ``_schema_v2`` builds on the pieces here. Top-level keys (all
required, no others allowed); "or null" marks stages an audit may end before:

``request``          the frozen audit request: ``specimen``, ``call``, ``strategy``,
                     ``parameters`` {``digest``, ``kind``}; further request fields
                     (policy, purpose, requester, tolerances...) may follow.
``baseline``         or null: {``reproduced``, ``layers``: {name: {``ok``, ``similarity``,
                     ``equal``, ``delta`` (quantised, in [-1, 1]), ``tolerance``,
                     ``changed_fields`` (recorded field names or ``new_field #k``)}}}.
``intervention``     or null: {``strategy``, ``target`` {``call_id``, ``field``},
                     ``declared_changes``, ``actual_changes``, ``unchanged_digest_before``,
                     ``unchanged_digest_after``, ``unchanged_digest_equal``}.
``samples``          or null: {``count``, ``seed``, ``seeds`` = "S..S+N-1"}.
``effect``           or null: {``mean_delta``, ``delta_interval`` (quantised, in
                     [-1, 1]), ``flip_rate``, ``flip_interval``, ``baseline_rate``,
                     ``intervened_rate``, ``histogram`` {``edges``, ``counts``}: the
                     paired deltas counted in fixed bins (no per-sample values),
                     ``confidence``}.
``placebo``          or null: {``passed``, ``max_abs_delta``, ``flips``}.
``classification``   short kebab-case label.
``auditability``     {``class``: counterfactual-admissible | observable-only,
                     ``first_unverifiable_step`` (step number, recorded call id,
                     ``new_call #k`` or null),
                     ``live_state_fields``, ``reason``}.
``not_established``  what the result does not establish (sentences).
``environment``      or null: {``isolation_layers``, ...}.
``lineage``          list of {``kind``, ...} links from specimen to certificate.
``grant``            or null: {``provider``, ``accessor``}.
``ledger``           the specimen's ledger position: {``specimen_entry_index``,
                     ``specimen_entry_hash``}.
``disclosure``       the disclosure bound: {``bits``, ``resolution``, ``bins``,
                     ``terms``: [{``field``, ``bits``}]} — how many bits the
                     agent-influenced content can carry; ``bits`` is the sum of the terms.
``issued_at``        RFC 3339 UTC time.
``issuer``           keyid of the signing key.

Rules beyond the schema (``predicate_problems``):

* An effect is reported only after a reproduced baseline (invariant 3), with an
  intervention that changed exactly what it declared and left the digest of
  everything else equal (invariant 4), with samples and a passed placebo, and never
  for an observable-only audit (invariant 9).
* ``unchanged_digest_equal`` is true exactly when the two digests are equal.
* ``seeds`` spells ``seed..seed+count-1``; the histogram has one count per pair of
  increasing edges and its counts sum to ``count``; each interval is ordered and holds
  its estimate; ``mean_delta``, the interval ends and the baseline's score ``delta`` lie
  on the ``disclosure.resolution`` grid.
* ``disclosure.bits`` is the sum of its terms (to 0.01 bit).
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from ._schemas import validation_errors
from ._vocabulary import AuditabilityClass

__all__ = ["PREDICATE_SCHEMA_V1", "predicate_problems_v1"]

_DIGEST = "^sha256:[0-9a-f]{64}$"
_FIELD_DIGEST = "^(hmac-sha256|sha256):[0-9a-f]{64}$"
_ENTRY_HASH = "^(sha256:)?[0-9a-f]{64}$"
_KEYID = "^sha256:[0-9a-f]{64}$"
_RFC3339_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|\+00:00)$"
_LABEL = "^[a-z][a-z0-9-]{0,63}$"
_MAX_SAMPLES = 100_000


def _str(max_length: int = 256, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, **extra}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [{"type": "null"}, schema]}


def _closed(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
    }


_UNIT = {"type": "number", "minimum": 0, "maximum": 1}
_BOUNDED = {"type": "number", "minimum": -1, "maximum": 1}
_PATHS = {"type": "array", "items": _str(512), "uniqueItems": True, "maxItems": 1024}
_SCALAR = {"type": ["string", "number", "integer", "boolean", "null"]}
_OPEN_VALUE = {"anyOf": [_SCALAR, {"type": "array"}, {"type": "object"}]}

_LAYER = _closed(
    ["ok"],
    {
        "ok": {"type": "boolean"},
        "similarity": _nullable(_UNIT),
        "equal": {"type": ["boolean", "null"]},
        "delta": _nullable(_BOUNDED),
        "tolerance": _nullable({"type": "number", "minimum": 0}),
        "changed_fields": {"type": "array", "items": _str(256), "maxItems": 1024},
    },
)

_INTERVAL = {
    "type": "array",
    "prefixItems": [{"type": "number"}, {"type": "number"}],
    "minItems": 2,
    "maxItems": 2,
}
_UNIT_INTERVAL = {"type": "array", "prefixItems": [_UNIT, _UNIT], "minItems": 2, "maxItems": 2}

PREDICATE_SCHEMA_V1: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://replay-enclave.dev/certificate/v1/predicate.schema.json",
    "title": "Replay Enclave certificate predicate v1",
    **_closed(
        [
            "request",
            "baseline",
            "intervention",
            "samples",
            "effect",
            "placebo",
            "classification",
            "auditability",
            "not_established",
            "environment",
            "lineage",
            "grant",
            "ledger",
            "disclosure",
            "issued_at",
            "issuer",
        ],
        {
            "request": {
                "type": "object",
                "required": ["specimen", "call", "strategy", "parameters"],
                "properties": {
                    "specimen": _str(),
                    "call": _str(),
                    "strategy": {"enum": ["NULLIFY", "REPLACE", "PERTURB", "REVISION"]},
                    "parameters": _closed(
                        ["digest", "kind"],
                        {"digest": _str(pattern=_FIELD_DIGEST), "kind": _str(64)},
                    ),
                },
                "additionalProperties": _OPEN_VALUE,
            },
            "baseline": _nullable(
                _closed(
                    ["reproduced", "layers"],
                    {
                        "reproduced": {"type": "boolean"},
                        "layers": {
                            "type": "object",
                            "propertyNames": {"pattern": "^[a-z][a-z0-9_.-]{0,63}$"},
                            "additionalProperties": _LAYER,
                        },
                    },
                )
            ),
            "intervention": _nullable(
                _closed(
                    [
                        "strategy",
                        "target",
                        "declared_changes",
                        "actual_changes",
                        "unchanged_digest_before",
                        "unchanged_digest_after",
                        "unchanged_digest_equal",
                    ],
                    {
                        "strategy": {"enum": ["NULLIFY", "REPLACE", "PERTURB", "REVISION"]},
                        "target": _closed(
                            ["call_id", "field"], {"call_id": _str(), "field": _str(512)}
                        ),
                        "declared_changes": _PATHS,
                        "actual_changes": _PATHS,
                        "unchanged_digest_before": _str(pattern=_FIELD_DIGEST),
                        "unchanged_digest_after": _str(pattern=_FIELD_DIGEST),
                        "unchanged_digest_equal": {"type": "boolean"},
                    },
                )
            ),
            "samples": _nullable(
                _closed(
                    ["count", "seed", "seeds"],
                    {
                        "count": {"type": "integer", "minimum": 1, "maximum": _MAX_SAMPLES},
                        "seed": {"type": "integer", "minimum": 0, "maximum": 2**53 - 1},
                        "seeds": _str(64, pattern="^[0-9]+\\.\\.[0-9]+$"),
                    },
                )
            ),
            "effect": _nullable(
                _closed(
                    [
                        "mean_delta",
                        "delta_interval",
                        "flip_rate",
                        "flip_interval",
                        "baseline_rate",
                        "intervened_rate",
                        "histogram",
                    ],
                    {
                        "mean_delta": _BOUNDED,
                        "delta_interval": _INTERVAL,
                        "flip_rate": _UNIT,
                        "flip_interval": _UNIT_INTERVAL,
                        "baseline_rate": _UNIT,
                        "intervened_rate": _UNIT,
                        "histogram": _closed(
                            ["edges", "counts"],
                            {
                                "edges": {
                                    "type": "array",
                                    "items": _BOUNDED,
                                    "minItems": 2,
                                    "maxItems": 65,
                                },
                                "counts": {
                                    "type": "array",
                                    "items": {"type": "integer", "minimum": 0},
                                    "minItems": 1,
                                    "maxItems": 64,
                                },
                            },
                        ),
                        "confidence": {
                            "type": "number",
                            "exclusiveMinimum": 0,
                            "exclusiveMaximum": 1,
                        },
                    },
                )
            ),
            "placebo": _nullable(
                _closed(
                    ["passed", "max_abs_delta", "flips"],
                    {
                        "passed": {"type": "boolean"},
                        "max_abs_delta": {"type": "number", "minimum": 0},
                        "flips": {"type": "integer", "minimum": 0},
                    },
                )
            ),
            "classification": {"type": "string", "pattern": _LABEL},
            "auditability": _closed(
                ["class", "live_state_fields", "reason"],
                {
                    "class": {
                        "enum": [
                            AuditabilityClass.COUNTERFACTUAL_ADMISSIBLE.value,
                            AuditabilityClass.OBSERVABLE_ONLY.value,
                        ]
                    },
                    "first_unverifiable_step": {
                        "anyOf": [{"type": "null"}, {"type": "integer", "minimum": 0}, _str()]
                    },
                    "live_state_fields": {"type": "array", "items": _str(512), "uniqueItems": True},
                    "reason": _str(1024),
                },
            ),
            "not_established": {"type": "array", "items": _str(1024), "maxItems": 64},
            "environment": _nullable(
                {
                    "type": "object",
                    "required": ["isolation_layers"],
                    "properties": {
                        "isolation_layers": {
                            "type": "array",
                            "items": _str(128),
                            "uniqueItems": True,
                        }
                    },
                    "additionalProperties": _OPEN_VALUE,
                }
            ),
            "lineage": {
                "type": "array",
                "maxItems": 256,
                "items": {
                    "type": "object",
                    "required": ["kind"],
                    "properties": {"kind": _str(64)},
                    "additionalProperties": _SCALAR,
                },
            },
            "grant": _nullable(
                _closed(
                    ["provider", "accessor"],
                    {
                        "provider": _str(64),
                        "accessor": _str(256),
                        "ttl_seconds": {"type": "integer", "minimum": 0},
                    },
                )
            ),
            "ledger": _closed(
                ["specimen_entry_index", "specimen_entry_hash"],
                {
                    "specimen_entry_index": {"type": "integer", "minimum": 0},
                    "specimen_entry_hash": _str(pattern=_ENTRY_HASH),
                },
            ),
            "disclosure": _closed(
                ["bits", "resolution", "bins", "terms"],
                {
                    "bits": {"type": "number", "minimum": 0},
                    "resolution": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                    "bins": {"type": "integer", "minimum": 1, "maximum": 64},
                    "terms": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 64,
                        "items": _closed(
                            ["field", "bits"],
                            {"field": _str(128), "bits": {"type": "number", "minimum": 0}},
                        ),
                    },
                },
            ),
            "issued_at": {"type": "string", "pattern": _RFC3339_UTC},
            "issuer": {"type": "string", "pattern": _KEYID},
        },
    ),
}

_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


def _location(path: Any) -> str:
    # schema-shaped names and indices only: an unknown key could carry content
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(str(part))
        elif isinstance(part, str) and _SAFE_NAME.match(part):
            parts.append(part)
        else:
            parts.append("*")
    return "/" + "/".join(parts)


def _schema_problems(predicate: Any, schema: dict[str, Any] | None = None) -> list[str]:
    schema = PREDICATE_SCHEMA_V1 if schema is None else schema
    errors = sorted(validation_errors(predicate, schema), key=lambda e: list(map(str, e.path)))
    return [f"{_location(e.absolute_path)}: {e.validator}" for e in errors]


def _on_grid(value: float, resolution: float) -> bool:
    steps = value / resolution
    return abs(value) == 1 or abs(steps - round(steps)) <= 1e-6


def _disclosure_problems(p: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    disclosure = p["disclosure"]
    total = math.fsum(t["bits"] for t in disclosure["terms"])
    if not math.isclose(total, disclosure["bits"], abs_tol=0.01):
        problems.append("/disclosure/bits: is not the sum of its terms")
    baseline = p["baseline"]
    score = (baseline or {}).get("layers", {}).get("score") or {}
    delta = score.get("delta")
    if delta is not None and not _on_grid(delta, disclosure["resolution"]):
        problems.append("/baseline/layers/score/delta: is not on the declared resolution")
    return problems


def _rule_problems(p: dict[str, Any], *, v1: bool = True) -> list[str]:
    """The v1 rules; with ``v1=False`` only those v2 keeps (the effect's figures are
    checked by ``_rules_v2``), the histogram only when there is one."""
    problems: list[str] = _disclosure_problems(p)
    intervention, samples, effect = p["intervention"], p["samples"], p["effect"]
    if intervention is not None:
        same = intervention["unchanged_digest_before"] == intervention["unchanged_digest_after"]
        if intervention["unchanged_digest_equal"] is not same:
            problems.append("/intervention/unchanged_digest_equal: contradicts the digests")
    if samples is not None:
        first, _, last = samples["seeds"].partition("..")
        if int(first) != samples["seed"] or int(last) != samples["seed"] + samples["count"] - 1:
            problems.append("/samples/seeds: does not spell seed..seed+count-1")
    if effect is None:
        return problems
    baseline = p["baseline"]
    if baseline is None or baseline["reproduced"] is not True:
        problems.append("/effect: reported without a reproduced baseline")
    if intervention is None or not intervention["unchanged_digest_equal"]:
        problems.append("/effect: reported without unchanged-digest equality")
    elif sorted(intervention["actual_changes"]) != sorted(intervention["declared_changes"]):
        problems.append("/effect: reported although actual changes differ from declared")
    if p["placebo"] is None or p["placebo"]["passed"] is not True:
        problems.append("/effect: reported without a passed placebo")
    if p["auditability"]["class"] != AuditabilityClass.COUNTERFACTUAL_ADMISSIBLE:
        problems.append("/effect: reported for an observable-only audit")
    histogram = effect.get("histogram")  # v3 has none
    if samples is None:
        problems.append("/effect: reported without samples")
    if histogram is not None:
        edges, counts = histogram["edges"], histogram["counts"]
        if len(counts) != len(edges) - 1 or any(a >= b for a, b in itertools.pairwise(edges)):
            problems.append("/effect/histogram: edges do not bound the counts' bins in order")
        if samples is not None and sum(counts) != samples["count"]:
            problems.append("/effect/histogram: counts do not sum to the sample count")
    if not v1:
        return problems
    resolution = p["disclosure"]["resolution"]
    if not all(_on_grid(v, resolution) for v in (effect["mean_delta"], *effect["delta_interval"])):
        problems.append("/effect: a delta is not on the declared resolution")
    lo, hi = effect["delta_interval"]
    if not lo <= effect["mean_delta"] <= hi:
        problems.append("/effect/delta_interval: does not hold the mean delta")
    lo, hi = effect["flip_interval"]
    if not lo <= effect["flip_rate"] <= hi:
        problems.append("/effect/flip_interval: does not hold the flip rate")
    return problems


def predicate_problems_v1(predicate: Any) -> list[str]:
    """Every schema violation and broken rule of a v1 predicate, as ``location: rule``
    (no values)."""
    problems = _schema_problems(predicate)
    if problems:
        return problems
    return _rule_problems(predicate)
