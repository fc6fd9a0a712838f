"""Opaque page cursors for keyset pagination (``next`` in a list, ``cursor`` to resume).

A cursor is URL-safe base64 (no padding) of canonical JSON naming the list and the last
position shown: ``["specimens", SEALED_INDEX]`` or ``["audits", CREATED_AT, AUDIT_ID]``.
It is a position, not a capability: the filters and every access check are applied
again on each request, so a forged cursor can only start a listing elsewhere in what
the caller may see anyway. Anything that is not exactly such a value — wrong alphabet,
padding, length, JSON, list name or types — is one 400 ``bad_cursor``, never echoed.
"""

from __future__ import annotations

import base64
import binascii
import re

from ledger import LedgerError, canonical_json, loads

from ._errors import ServiceError

__all__ = [
    "audits_cursor",
    "read_audits_cursor",
    "read_specimens_cursor",
    "specimens_cursor",
]

_MAX_CHARS = 512
_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# [0-9], not \d: \d also matches other scripts' digits, which no issued cursor holds
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def _bad() -> ServiceError:
    return ServiceError(400, "bad_cursor", "the cursor is not one this service issued")


def _encode(value: list[object]) -> str:
    return base64.urlsafe_b64encode(canonical_json(value)).rstrip(b"=").decode("ascii")


def _decode(cursor: str, kind: str, size: int) -> list[object]:
    if not 1 <= len(cursor) <= _MAX_CHARS or not _ALPHABET.fullmatch(cursor):
        raise _bad()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = loads(raw)
        # one spelling per position: re-encoding must give back the very same text (and
        # a value canonical JSON refuses, such as a lone surrogate, is no issued cursor)
        same = isinstance(value, list) and _encode(value) == cursor
    except (binascii.Error, ValueError, LedgerError):
        raise _bad() from None
    if not same or len(value) != size or value[0] != kind:
        raise _bad()
    return list(value)


def specimens_cursor(sealed_index: int) -> str:
    return _encode(["specimens", sealed_index])


def read_specimens_cursor(cursor: str) -> int:
    """The ledger index a specimens page continues before."""
    _, index = _decode(cursor, "specimens", 2)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise _bad()
    return index


def audits_cursor(created_at: str, audit_id: str) -> str:
    return _encode(["audits", created_at, audit_id])


def read_audits_cursor(cursor: str) -> tuple[str, str]:
    """The (created_at, audit id) an audits page continues before."""
    _, created_at, audit_id = _decode(cursor, "audits", 3)
    if not isinstance(created_at, str) or not _TIME.fullmatch(created_at):
        raise _bad()
    if not isinstance(audit_id, str) or not _ID.fullmatch(audit_id):
        raise _bad()
    return created_at, audit_id
