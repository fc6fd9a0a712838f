"""Payload references and names: validated before any file access.

A reference is ``<segment>/<segment>/...`` with ASCII letters, digits, ``.``, ``_`` and
``-`` only. That alone refuses ``..`` tricks written as percent-encoding (``%2e``),
full-width dots (``．``), backslashes, NUL and absolute paths; ``.`` and ``..`` segments
are refused by name; the resolved path must stay inside the store root, so a symlink
leading out is refused too. An inference answer's key is 64 lowercase hex characters
(a SHA-256 digest) and nothing else, so it can never be a path.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._errors import BadInput

__all__ = ["resolve_ref", "validate_answer_key", "validate_id", "validate_ref"]

_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_MAX_REF = 512
ANSWER_KEY = re.compile(r"[0-9a-f]{64}")


def validate_id(value: str, *, what: str) -> str:
    """An identifier that will become one path segment (tenant, specimen)."""
    if not isinstance(value, str) or not _SEGMENT.fullmatch(value) or ".." in value:
        raise BadInput(f"{what} must be 1-128 characters of letters, digits, '.', '_' or '-'")
    return value


def validate_answer_key(key: str) -> str:
    """An inference answer's key: a file name in the file store, a row's key in the
    database store."""
    if not isinstance(key, str) or not ANSWER_KEY.fullmatch(key):
        raise BadInput("an answer key must be 64 lowercase hex characters")
    return key


def validate_ref(ref: str) -> tuple[str, ...]:
    if not isinstance(ref, str) or not ref or len(ref) > _MAX_REF:
        raise BadInput("payload reference is malformed")
    segments = tuple(ref.split("/"))
    for segment in segments:
        if segment in ("", ".", "..") or not _SEGMENT.fullmatch(segment) or ".." in segment:
            raise BadInput("payload reference is malformed")
    return segments


def resolve_ref(root: Path, ref: str) -> Path:
    """The file a reference names, guaranteed to lie inside ``root``."""
    segments = validate_ref(ref)
    base = root.resolve()
    target = base.joinpath(*segments)
    resolved = target.resolve()
    if resolved != target or not resolved.is_relative_to(base):
        # a symlink somewhere on the way leads elsewhere
        raise BadInput("payload reference leaves the store")
    return resolved
