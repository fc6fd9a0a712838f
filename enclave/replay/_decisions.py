"""Decisions as labels from a closed vocabulary: what a per-sample row may say.

A run's decision is plaintext chosen by agent code, so it never leaves as itself. It is
reported as ``recorded`` (equal to the specimen's recorded decision), as one of the
values the agent declares for its outcome's decision (names fixed in code before any
run), or as ``other``. Two ``other`` decisions may still differ: the flip is decided on
the values themselves, inside the enclave.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "MAX_DECLARED",
    "OTHER",
    "RECORDED",
    "decision_label",
    "decision_vocabulary",
    "flip_consistent",
]

RECORDED = "recorded"
OTHER = "other"
MAX_DECLARED = 16


def decision_vocabulary(declared: Sequence[str] = ()) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(declared))
    if len(names) > MAX_DECLARED or not all(
        isinstance(n, str) and 0 < len(n) <= 64 and n not in (RECORDED, OTHER) for n in names
    ):
        raise ValueError("declared decisions are at most 16 distinct short names")
    return (RECORDED, *names, OTHER)


def decision_label(value: Any, *, recorded: Any, declared: Sequence[str] = ()) -> str:
    if value == recorded:
        return RECORDED
    if isinstance(value, str) and value in declared:
        return value
    return OTHER


def flip_consistent(baseline: str, intervened: str, flip: bool) -> bool:
    """Labels that differ are a flip; equal labels other than ``other`` are not."""
    if baseline != intervened:
        return flip
    return baseline == OTHER or not flip
