"""The witness side of C2SP tlog-witness ``add-checkpoint``: cosign a log's checkpoint
only if it is consistent with the latest one this witness cosigned for that origin.

Request body: ``old <size>\\n``, zero to 63 base64 consistency-proof lines, an empty
line, then the checkpoint's signed note. Answers, as the specification orders them:
400 a malformed request or an old size above the checkpoint's; 404 an origin this
witness does not follow; 403 no signature by that log's key; 409 an old size that is
not the one last cosigned (body: that size, ``text/x.tlog.size``), or the same size
with another root; 422 a consistency proof that does not verify; 200 the cosignature
line. The state is changed only by a compare-and-set from the size and root checked,
so two racing requests cannot roll the witness back.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ._cosignature import WitnessVerifier, cosign
from ._merkle import HASH_SIZE, ProofInvalid, verify_consistency
from ._note import NoteInvalid, NoteVerifier, open_note, parse_checkpoint

__all__ = ["WitnessAnswer", "WitnessState", "add_checkpoint"]

SIZE_TYPE = "text/x.tlog.size"
_MAX_PROOF = 63
_MAX_BODY = 64 * 1024


@dataclass(frozen=True)
class WitnessAnswer:
    status: int
    body: str
    content_type: str = "text/plain; charset=utf-8"


class WitnessState(Protocol):
    """The latest checkpoint a witness cosigned, per origin."""

    def latest(self, origin: str) -> tuple[int, bytes] | None:
        """(size, root) last cosigned for ``origin``, or None."""
        ...

    def advance(self, origin: str, seen: tuple[int, bytes] | None, new: tuple[int, bytes]) -> bool:
        """Record ``new`` only if the latest is still ``seen``; False if it moved."""
        ...


def _refuse(status: int, why: str) -> WitnessAnswer:
    return WitnessAnswer(status, why + "\n")


def _stale(size: int) -> WitnessAnswer:
    return WitnessAnswer(409, f"{size}\n", SIZE_TYPE)


def _request(body: bytes) -> tuple[int, list[bytes], str]:
    if len(body) > _MAX_BODY:
        raise ValueError("too large")
    head, sep, note = body.decode("utf-8").partition("\n\n")
    lines = head.split("\n")
    digits = lines[0].removeprefix("old ")
    if not sep or not lines[0].startswith("old ") or not digits.isascii() or not digits.isdigit():
        raise ValueError("no old size line")
    if digits != "0" and digits.startswith("0"):
        raise ValueError("a size has no leading zero")
    if len(lines) - 1 > _MAX_PROOF:
        raise ValueError("too long a proof")
    proof = [base64.b64decode(line, validate=True) for line in lines[1:]]
    if any(len(h) != HASH_SIZE for h in proof):
        raise ValueError("a proof hash is 32 bytes")
    return int(digits), proof, note


def add_checkpoint(
    body: bytes,
    *,
    logs: Mapping[str, NoteVerifier],
    witness: WitnessVerifier,
    sign: Callable[[bytes], bytes],
    state: WitnessState,
    now: int,
) -> WitnessAnswer:
    """Answer one ``add-checkpoint`` request (module docstring)."""
    try:
        old, proof, note = _request(body)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        return _refuse(400, "a malformed add-checkpoint request")
    origin = note.split("\n", 1)[0]
    log = logs.get(origin)
    if log is None:
        return _refuse(404, "an origin this witness does not follow")
    try:
        text, _ = open_note(note, [log])
        checkpoint = parse_checkpoint(text)
    except NoteInvalid:
        return _refuse(403, "no signature by the log's key")
    if checkpoint.origin != origin or old > checkpoint.size:
        return _refuse(400, "the old size is above the checkpoint's")
    seen = state.latest(origin)
    seen_size = 0 if seen is None else seen[0]
    if old != seen_size:
        return _stale(seen_size)
    if seen is None or old == 0:
        if proof:
            return _refuse(422, "a proof from size 0 is empty")
    elif old == checkpoint.size:
        if proof or checkpoint.root != seen[1]:
            return _stale(seen_size)
    else:
        try:
            verify_consistency(old, checkpoint.size, seen[1], checkpoint.root, proof)
        except ProofInvalid:
            return _refuse(422, "the consistency proof does not verify")
    if not state.advance(origin, seen, (checkpoint.size, checkpoint.root)):
        latest = state.latest(origin)
        return _stale(0 if latest is None else latest[0])
    return WitnessAnswer(200, cosign(text, witness, sign, now))
