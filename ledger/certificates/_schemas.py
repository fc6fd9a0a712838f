"""JSON Schema (draft 2020-12) checks, loaded on first use.

Importing ``jsonschema`` can cost seconds: where the optional ``rfc3987-syntax`` package
is installed (Jupyter brings it), jsonschema compiles its IRI grammars at import —
about 40 Lark parsers, 3–5 s here. Formats are annotations, not assertions, in draft
2020-12 and no validator here checks them, so that package is kept from loading (see
:func:`_import_jsonschema`). Replay workers and most commands never need jsonschema at
all, so nothing imports it until a schema is actually checked. Results are booleans and
error *locations* — a validator's message quotes the offending value, so it never
leaves this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["is_valid", "schema_is_valid", "validation_errors"]


def _import_jsonschema() -> Any:
    import sys

    if "jsonschema" not in sys.modules:
        # jsonschema imports it only to offer an "iri" format checker, never used here
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    import jsonschema

    return jsonschema


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import json

    return _import_jsonschema().Draft202012Validator(json.loads(schema_json))


def _key(schema: Mapping[str, Any]) -> str:
    import json

    return json.dumps(schema, sort_keys=True)


def schema_is_valid(schema: Mapping[str, Any]) -> bool:
    jsonschema = _import_jsonschema()
    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError:
        return False
    return True


def is_valid(value: Any, schema: Mapping[str, Any]) -> bool:
    return bool(_validator(_key(schema)).is_valid(value))


def validation_errors(value: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    """The validator's errors (use their ``absolute_path`` and ``validator`` only)."""
    return iter(_validator(_key(schema)).iter_errors(value))
