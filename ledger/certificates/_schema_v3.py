"""JSON Schema for the v3 certificate predicate (``.../certificate/v3``): tight by default.

v3 is v2 (``_schema_v2``) without the figures an agent under audit could fill with
content of its own choosing (``docs/certificate-v3.md``):

``sample_rows``     absent: no row per seed.
``effect``          no ``histogram``; ``layer_changes`` is coarse per layer (``none``,
                    ``some`` or ``all`` of N samples); ``equivalence.delta_interval`` and
                    ``mde.delta`` are derived from the mean and the two-sided interval
                    (``statistics.derived_equivalence`` / ``derived_delta_mde``) and
                    checked equal to them, so they carry nothing of their own.
``served_by``       per arm, one row for the recorded calls taken together (``calls``:
                    ``recorded``) and one for the calls the record does not know
                    (``new``), each mark coarse: ``none``, ``some`` or ``all`` of the
                    (call, sample) cells. No call is named.
``substituted``     the recorded boundaries whose declared substitute served a call in
                    some arm (null exactly when ``served_by`` is).
``recorded_seed``   no ``delta``: its decisions and flip only.
``baseline``        a layer's ``changed_fields`` is a count, not the fields' names.
``disclosure``      no ``bins`` (there is no histogram).

The rules beyond the schema are in ``_rules_v3``.
"""

from __future__ import annotations

import copy
from typing import Any

from ._schema import _closed, _str
from ._schema_v2 import ARMS, INFERENCE_COLUMN, SERVED_COLUMNS
from ._schema_v2 import PREDICATE_SCHEMA as PREDICATE_SCHEMA_V2

__all__ = ["COARSE", "PREDICATE_SCHEMA", "PREDICATE_SCHEMA_V2"]

COARSE = ("none", "some", "all")  # of the N samples
_COARSE = {"enum": list(COARSE)}
_MAX_FIELDS = 1024


def _v3() -> dict[str, Any]:
    schema = copy.deepcopy(PREDICATE_SCHEMA_V2)
    schema["$id"] = "https://replay-enclave.dev/certificate/v3/predicate.schema.json"
    schema["title"] = "Replay Enclave certificate predicate v3"
    properties = schema["properties"]
    del properties["sample_rows"]
    schema["required"] = [name for name in schema["required"] if name != "sample_rows"]
    effect = properties["effect"]["anyOf"][1]
    del effect["properties"]["histogram"]
    effect["required"] = [name for name in effect["required"] if name != "histogram"]
    layers = effect["properties"]["layer_changes"]
    layers["properties"] = {name: _COARSE for name in layers["properties"]}
    properties["served_by"]["anyOf"][1] = {
        "type": "array",
        "maxItems": 2 * len(ARMS),
        "items": _closed(
            ["arm", "calls", *SERVED_COLUMNS],
            {"arm": {"enum": list(ARMS)}, "calls": {"enum": ["recorded", "new"]}}
            | {column: _COARSE for column in (*SERVED_COLUMNS, INFERENCE_COLUMN)},
        ),
    }
    properties["substituted"] = {
        "anyOf": [
            {"type": "null"},
            {"type": "array", "maxItems": 1024, "uniqueItems": True, "items": _str(128)},
        ]
    }
    schema["required"] = [*schema["required"], "substituted"]
    ran = properties["recorded_seed"]["anyOf"][1]["oneOf"][1]
    del ran["properties"]["delta"]
    ran["required"] = [name for name in ran["required"] if name != "delta"]
    layer = properties["baseline"]["anyOf"][1]["properties"]["layers"]["additionalProperties"]
    layer["properties"]["changed_fields"] = {
        "type": "integer",
        "minimum": 0,
        "maximum": _MAX_FIELDS,
    }
    disclosure = properties["disclosure"]
    del disclosure["properties"]["bins"]
    disclosure["required"] = [name for name in disclosure["required"] if name != "bins"]
    return schema


PREDICATE_SCHEMA: dict[str, Any] = _v3()
