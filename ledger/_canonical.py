"""RFC 8785 (JSON Canonicalization Scheme) bytes for everything hashed or signed.

Rules this module enforces, decided once for the whole project:

* Numbers are IEEE-754 doubles (I-JSON). NaN and ±Infinity are rejected. A Python
  ``int`` outside ±(2**53 - 1) is rejected: it has no exact double, and silently
  rounding it would make two different values share a digest. When canonical text is
  parsed back (``loads``) an integer literal outside that range is read as a double,
  so the float 2**53 (written ``9007199254740992``) round-trips to the same bytes.
* Strings must be valid Unicode scalar values: a lone surrogate is rejected.
* No Unicode normalisation. NFC and NFD spellings of the same text are different
  evidence and canonicalise to different bytes; a digest binds exactly the code
  points the agent saw.
* Keys must be strings; ``bool`` is never a number; tuples serialise as arrays.

The fast path walks the value once (validation is needed anyway), writes each float
in ECMAScript ``Number.prototype.toString`` form as a pre-serialised fragment, and lets
orjson emit sorted, escaped JSON. Keys that could sort differently in UTF-16 than in
UTF-8 (any code point at or above U+E000) take the reference ``rfc8785`` path.
``tests/unit/ledger/test_canonical.py`` proves both paths byte-identical on generated inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import rfc8785

from ._errors import CanonicalizationError, raise_unchained

MAX_SAFE_INTEGER = 2**53 - 1

__all__ = ["canonical_json", "canonical_digest", "loads", "es6_number", "MAX_SAFE_INTEGER"]


def es6_number(value: float) -> str:
    """ECMAScript Number::toString for a finite double (RFC 8785 §3.2.2.3)."""
    if value == 0:
        return "0"
    if value < 0:
        return "-" + es6_number(-value)
    mantissa, _, exp_text = repr(value).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # decimal point position relative to the digit string's start
    point = len(whole) + (int(exp_text) if exp_text else 0)
    point -= len(whole + frac) - len((whole + frac).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e > 0 else "-"
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(e)}"


class _NeedsReference(Exception):
    """Internal: this value's key order needs UTF-16 sorting."""


def _prepare(value: Any) -> Any:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        raise CanonicalizationError("integer outside the exactly representable range")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalizationError("NaN or Infinity has no canonical form")
        return orjson.Fragment(es6_number(value).encode())
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError("object keys must be strings")
            if any(ord(ch) >= 0xE000 for ch in key):
                raise _NeedsReference
            out[key] = _prepare(item)
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_prepare(item) for item in value]
    raise CanonicalizationError(f"type {type(value).__name__} has no canonical JSON form")


def _reference(value: Any) -> bytes:
    _check_reference(value)
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, ValueError, TypeError):
        raise_unchained(CanonicalizationError("value has no canonical JSON form"))


def _check_reference(value: Any) -> None:
    # rfc8785 accepts some inputs our rules refuse; apply the same rules first.
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        _prepare(value)
    elif isinstance(value, str):
        _check_scalar_values(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError("object keys must be strings")
            _check_scalar_values(key)
            _check_reference(item)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for item in value:
            _check_reference(item)
    else:
        raise CanonicalizationError(f"type {type(value).__name__} has no canonical JSON form")


def _check_scalar_values(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # its ``object`` is the whole string
        raise_unchained(CanonicalizationError("string holds a lone surrogate"))


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of ``value``, or ``CanonicalizationError``."""
    try:
        prepared = _prepare(value)
    except _NeedsReference:
        return _reference(value)
    except RecursionError:
        raise_unchained(CanonicalizationError("value nests too deeply"))
    try:
        return orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        # orjson refuses lone surrogates (str not valid UTF-8) and over-deep nesting
        raise_unchained(CanonicalizationError("value has no canonical JSON form"))


def canonical_digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical bytes."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def _parse_int(text: str) -> int | float:
    number = int(text)
    return number if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER else float(number)


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise CanonicalizationError("number overflows a double")
    return number


def _refuse_constant(name: str) -> Any:
    raise CanonicalizationError("NaN or Infinity is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in pairs:
        if key in out:
            raise CanonicalizationError("duplicate object key")
        out[key] = item
    return out


def loads(data: bytes | str) -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, I-JSON integers.

    Errors never carry the document (``JSONDecodeError.doc`` would echo it).
    """
    try:
        return json.loads(
            data,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except CanonicalizationError:
        raise
    except (ValueError, RecursionError, UnicodeDecodeError):
        # the decode error's ``doc`` attribute holds the whole input
        raise_unchained(CanonicalizationError("input is not valid JSON"))
