"""The lazily loaded JSON Schema checks: the certificate predicate schema is itself a
valid draft 2020-12 schema, and checks answer booleans without quoting values."""

from __future__ import annotations

from ledger.certificates import PREDICATE_SCHEMA, is_valid, schema_is_valid, validation_errors


def test_predicate_schema_is_a_valid_schema() -> None:
    assert schema_is_valid(PREDICATE_SCHEMA)
    assert not schema_is_valid({"type": 12})


def test_checks_are_booleans_and_locations() -> None:
    bounded = {"type": "number", "minimum": 0, "maximum": 1}
    assert is_valid(0.5, bounded)
    assert not is_valid(1.5, bounded)
    errors = list(
        validation_errors({"a": "CANARY-SCHEMA"}, {"properties": {"a": {"type": "number"}}})
    )
    assert [list(e.absolute_path) for e in errors] == [["a"]]
