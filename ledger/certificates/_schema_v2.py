"""JSON Schema for the v2 certificate predicate (``.../certificate/v2``).

v2 is v1 (``_schema``) with these changes (``docs/certificate-v2.md``):

``classification``  influential | equivalent | inconclusive | baseline-not-reproduced |
                    observable-only (``no-measurable-influence`` is no longer issued).
``auditability``    ``class`` may also be ``not-assessed`` (nothing was compared).
``effect``          adds ``outcome`` (numeric | categorical), ``flips``,
                    ``score_tolerance``, ``flip_tolerance``, ``equivalence`` {``test``
                    TOST, ``alpha``, ``delta_interval``, ``flip_upper``}, ``mde``
                    {``power``, ``delta``, ``flip_rate``} and ``layer_changes`` {layer:
                    samples changed}; ``mean_delta``, ``delta_interval`` and
                    ``histogram`` are null for a categorical outcome.
``recorded_seed``   or null: {``seed``, ``sampled``} and, when sampled, ``flip``,
                    ``baseline``, ``intervened`` (decision labels) and ``delta``.
``sample_rows``     or null: [seed, baseline label, intervened label, flip] per sample.
``served_by``       or null: per (``arm``, ``call``) the samples whose call was served by
                    ``record`` / ``substitute`` / ``intervention`` / ``unservable``, left
                    ``unused``, or ``absent``; calls the record does not know are one
                    ``new calls`` row per arm. An audit whose calls were answered by
                    governed inference has an ``inference`` column on every row.
``inference``       optional (an audit that authorised no inference has none): the
                    grants and, per arm, the calls answered live and from the audit's
                    record and the tokens used (``docs/inference.md``).
``substitute_answers`` optional (certificates issued before it have none):
                    {``boundaries``, ``samples``}: the boundaries whose substitute
                    answered, in some arm, a request the record does not hold (one the
                    record never called is ``(unrecorded boundary)``), and in how many
                    samples any of them did.
                    The request may name ``authoritative_substitutes``; any other
                    boundary listed here caps the label at ``inconclusive``.
``cut``             optional (a full replay has none): the cut every run started from,
                    {``name``, ``call_id``, ``calls_before``}; the request then names it
                    as ``from_cut``. Calls inside the cut's work were neither executed nor
                    served and have no ``served_by`` row (``docs/cuts.md``).

The rules beyond the schema are in ``_rules_v2``.
"""

from __future__ import annotations

import copy
from typing import Any

from ._schema import _BOUNDED, _UNIT, _UNIT_INTERVAL, PREDICATE_SCHEMA_V1, _closed, _nullable, _str
from ._vocabulary import AuditabilityClass, AuditLabel

__all__ = [
    "ARMS",
    "EFFECT_LABELS",
    "INFERENCE_COLUMN",
    "LAYER_NAMES",
    "PREDICATE_SCHEMA",
    "SERVED_COLUMNS",
]

EFFECT_LABELS = tuple(label.value for label in AuditLabel if label.is_effect)
LABELS = (
    *EFFECT_LABELS,
    AuditLabel.BASELINE_NOT_REPRODUCED.value,
    AuditLabel.OBSERVABLE_ONLY.value,
)
LAYER_NAMES = ("score", "decision", "proposal", "evidence", "policy", "effects", "readback")
ARMS = ("baseline", "intervened", "placebo")
SERVED_COLUMNS = ("record", "substitute", "intervention", "unservable", "unused", "absent")
INFERENCE_COLUMN = "inference"  # present on every row, or on none
_MAX_SAMPLES = 100_000
_COUNT = {"type": "integer", "minimum": 0, "maximum": _MAX_SAMPLES}
_DECISION = _str(64)
_BOUNDED_INTERVAL = {
    "type": "array",
    "prefixItems": [_BOUNDED, _BOUNDED],
    "minItems": 2,
    "maxItems": 2,
}
STRATEGIES_V1 = ("NULLIFY", "REPLACE", "PERTURB", "REVISION")
_OPEN_UNIT = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}


def _effect(v1_effect: dict[str, Any]) -> dict[str, Any]:
    histogram = v1_effect["properties"]["histogram"]
    properties = {
        "outcome": {"enum": ["numeric", "categorical"]},
        "mean_delta": _nullable(_BOUNDED),
        "delta_interval": _nullable(_BOUNDED_INTERVAL),
        "flips": _COUNT,
        "flip_rate": _UNIT,
        "flip_interval": _UNIT_INTERVAL,
        "baseline_rate": _UNIT,
        "intervened_rate": _UNIT,
        "histogram": _nullable(histogram),
        "confidence": _OPEN_UNIT,
        "score_tolerance": _UNIT,
        "flip_tolerance": _UNIT,
        "equivalence": _closed(
            ["test", "alpha", "delta_interval", "flip_upper"],
            {
                "test": {"const": "TOST"},
                "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
                "delta_interval": _nullable(_BOUNDED_INTERVAL),
                "flip_upper": _UNIT,
            },
        ),
        "mde": _closed(
            ["power", "delta", "flip_rate"],
            {"power": _OPEN_UNIT, "delta": _nullable(_UNIT), "flip_rate": _nullable(_UNIT)},
        ),
        "layer_changes": _closed(list(LAYER_NAMES), {name: _COUNT for name in LAYER_NAMES}),
    }
    return _nullable(_closed(list(properties), properties))


_RECORDED_SEED = _nullable(
    {
        "oneOf": [
            _closed(
                ["seed", "sampled"],
                {"seed": {"type": "integer", "minimum": 0}, "sampled": {"const": False}},
            ),
            _closed(
                ["seed", "sampled", "flip", "baseline", "intervened", "delta"],
                {
                    "seed": {"type": "integer", "minimum": 0},
                    "sampled": {"type": "boolean"},  # else run on its own at preparation
                    "flip": {"type": "boolean"},
                    "baseline": _DECISION,
                    "intervened": _DECISION,
                    "delta": _nullable(_BOUNDED),
                },
            ),
        ]
    }
)

# per recorded boundary with a declared substitute: did it reproduce the record? (optional:
# certificates issued before it was checked have none)
_SUBSTITUTE_FIDELITY = _nullable(
    {
        "type": "object",
        "maxProperties": 256,
        "additionalProperties": _closed(
            ["checked", "faithful"],
            {"checked": {"type": "integer", "minimum": 1}, "faithful": {"type": "boolean"}},
        ),
    }
)

_SAMPLE_ROWS = _nullable(
    {
        "type": "array",
        "maxItems": _MAX_SAMPLES,
        "items": {
            "type": "array",
            "prefixItems": [
                {"type": "integer", "minimum": 0},
                _DECISION,
                _DECISION,
                {"type": "boolean"},
            ],
            "minItems": 4,
            "maxItems": 4,
        },
    }
)

_CUT_NAME = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
# optional: certificates of full replays (and all issued before cuts existed) have none
_CUT = _closed(
    ["name", "call_id", "calls_before"],
    {
        "name": _str(64, pattern=_CUT_NAME),
        "call_id": _str(),
        "calls_before": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
    },
)

_SUBSTITUTE_ANSWERS = _closed(
    ["boundaries", "samples"],
    {
        "boundaries": {"type": "array", "maxItems": 1025, "uniqueItems": True, "items": _str(128)},
        "samples": _COUNT,
    },
)
_AUTHORITATIVE = {"type": "array", "maxItems": 64, "uniqueItems": True, "items": _str(128)}

_SERVED_BY = _nullable(
    {
        "type": "array",
        "maxItems": 3 * 1024,
        "items": _closed(
            ["arm", "call", *SERVED_COLUMNS],
            {"arm": {"enum": list(ARMS)}, "call": _str(256)}
            | {column: _COUNT for column in (*SERVED_COLUMNS, INFERENCE_COLUMN)},
        ),
    }
)
_TALLY = {"type": "integer", "minimum": 0, "maximum": 2**53 - 1}
_INFERENCE_ARM = _closed(
    ["asked", "from_record", "input_tokens", "output_tokens"],
    {name: _TALLY for name in ("asked", "from_record", "input_tokens", "output_tokens")},
)
_INFERENCE = _closed(
    ["grants", "seeded", "arms"],
    {
        "grants": {
            "type": "array",
            "minItems": 1,
            "maxItems": 16,
            "items": _closed(
                ["boundary", "endpoint", "model", "vary", "caps"],
                {
                    "boundary": _str(128),
                    "endpoint": _str(64),
                    "model": _str(256),
                    "vary": {"type": "array", "maxItems": 16, "items": _str(64)},
                    "caps": _closed(
                        ["calls", "input_tokens", "output_tokens", "wall_seconds"],
                        {
                            name: _TALLY
                            for name in ("calls", "input_tokens", "output_tokens", "wall_seconds")
                        },
                    ),
                },
            ),
        },
        "seeded": {"type": "boolean"},
        "arms": _closed(
            ["preparation", *ARMS], {name: _INFERENCE_ARM for name in ("preparation", *ARMS)}
        ),
    },
)


def _v2() -> dict[str, Any]:
    schema = copy.deepcopy(PREDICATE_SCHEMA_V1)
    schema["$id"] = "https://replay-enclave.dev/certificate/v2/predicate.schema.json"
    schema["title"] = "Replay Enclave certificate predicate v2"
    properties = schema["properties"]
    v1_effect = PREDICATE_SCHEMA_V1["properties"]["effect"]["anyOf"][1]
    properties["effect"] = _effect(v1_effect)
    properties["classification"] = {"enum": list(LABELS)}
    properties["auditability"]["properties"]["class"] = {
        "enum": [klass.value for klass in AuditabilityClass]
    }
    properties["recorded_seed"] = _RECORDED_SEED
    properties["sample_rows"] = _SAMPLE_ROWS
    properties["served_by"] = _SERVED_BY
    properties["substitute_fidelity"] = _SUBSTITUTE_FIDELITY
    properties["cut"] = _CUT  # not required
    properties["substitute_answers"] = _SUBSTITUTE_ANSWERS  # not required
    properties["inference"] = _INFERENCE  # not required
    properties["request"]["properties"]["authoritative_substitutes"] = _AUTHORITATIVE
    properties["request"]["properties"]["from_cut"] = _str(64, pattern=_CUT_NAME)
    # a code revision (a candidate release) is an intervention of its own
    for where in (properties["request"], properties["intervention"]["anyOf"][1]):
        where["properties"]["strategy"] = {"enum": [*STRATEGIES_V1, "CODE"]}
    schema["required"] = [*schema["required"], "recorded_seed", "sample_rows", "served_by"]
    return schema


PREDICATE_SCHEMA: dict[str, Any] = _v2()
