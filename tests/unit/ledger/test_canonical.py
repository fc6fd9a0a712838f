"""Canonical JSON: conformance with the reference RFC 8785 implementation, refusals,
and round-trip stability (hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave.capture import PAYLOAD_V1, decode_payload
from ledger import MAX_SAFE_INTEGER, CanonicalizationError, canonical_json, es6_number, loads
from tests.unit.ledger.test_ledger import error_chain

safe_ints = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | safe_ints | finite_floats | texts,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(texts, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=600)
@given(json_values)
def test_fast_path_is_byte_identical_to_reference(value: object) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@settings(max_examples=600)
@given(json_values)
def test_canonical_bytes_are_stable_across_a_round_trip(value: object) -> None:
    first = canonical_json(value)
    assert canonical_json(loads(first)) == first


@settings(max_examples=2000)
@given(finite_floats)
def test_number_formatting_matches_ecmascript(value: float) -> None:
    assert es6_number(value) == rfc8785.dumps(value).decode()


def test_keys_sort_by_utf16_code_units() -> None:
    # U+FB01 sorts after U+1F600 in UTF-8 / code points but before it in UTF-16
    value = {"\ufb01": 1, "\U0001f600": 2, "a": 3}
    assert canonical_json(value) == rfc8785.dumps(value)
    assert canonical_json(value).index("\ufb01".encode()) > canonical_json(value).index(b'"a"')


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        2**53,
        -(2**53),
        2**64,
        "\ud800",
        {"k": "\udfff"},
        {1: "x"},
        b"bytes",
        {"\ue000\ud800": 1},
    ],
)
def test_values_without_canonical_form_are_refused(bad: object) -> None:
    with pytest.raises(CanonicalizationError) as info:
        canonical_json(bad)
    # the encoder's error holds the value (``UnicodeEncodeError.object``): not linked
    assert info.value.__cause__ is None and info.value.__context__ is None


CANARY = "CANARY-canonical-7f3a"


@pytest.mark.parametrize(
    "refused",
    [
        lambda: loads(('{"secret": "' + CANARY + '", ').encode()),
        lambda: canonical_json({"secret": CANARY + "\ud800"}),
        lambda: decode_payload(PAYLOAD_V1 + ('{"secret": "' + CANARY).encode()),
    ],
)
def test_a_refusal_refers_to_no_exception_holding_the_value(refused: Any) -> None:
    """``from None`` only hides the handled exception from the traceback: it stays the
    ``__context__``, and a decoder's keeps the whole input as ``doc``."""
    with pytest.raises(CanonicalizationError) as info:
        refused()
    assert error_chain(info.value) == [info.value]
    assert CANARY not in str(info.value)


def test_float_two_to_the_53_round_trips() -> None:
    text = canonical_json(2.0**53)
    assert text == b"9007199254740992"
    assert canonical_json(loads(text)) == text


def test_unicode_is_not_normalised() -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    assert canonical_json(nfc) != canonical_json(nfd)


@pytest.mark.parametrize("doc", [b'{"a":1,"a":2}', b"NaN", b"[1e400]", b'{"a":', b"\xff"])
def test_strict_parse_refuses_without_echoing(doc: bytes) -> None:
    with pytest.raises(CanonicalizationError) as info:
        loads(doc)
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert str(info.value) in {
        "input is not valid JSON",
        "duplicate object key",
        "NaN or Infinity is not JSON",
        "number overflows a double",
    }
