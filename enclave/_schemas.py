"""JSON Schema (draft 2020-12) checks, loaded on first use.

Importing ``jsonschema`` can cost a second (its optional IRI grammar is compiled at
import time); replay workers and most commands never need it, so nothing imports it
until a schema is actually checked. Results are booleans and error *locations* — a
validator's message quotes the offending value, so it never leaves this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["is_valid", "schema_is_valid", "validation_errors"]


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import json

    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _key(schema: Mapping[str, Any]) -> str:
    import json

    return json.dumps(schema, sort_keys=True)


def schema_is_valid(schema: Mapping[str, Any]) -> bool:
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError:
        return False
    return True


def is_valid(value: Any, schema: Mapping[str, Any]) -> bool:
    return bool(_validator(_key(schema)).is_valid(value))


def validation_errors(value: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The validator's errors (use their ``absolute_path`` and ``validator`` only)."""
    return iter(_validator(_key(schema)).iter_errors(value))
