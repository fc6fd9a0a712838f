"""C2SP transparency-log proofs (c2sp.org/tlog-proof): an entry's index, its RFC 9162
inclusion proof and the signed checkpoint it is proven against, as one text.

::

    c2sp.org/tlog-proof@v1
    [extra <base64>]
    index <decimal>
    <base64 hash>            (zero or more: the audit path, leaf's sibling first)

    <the checkpoint's signed note, verbatim>

Parsing is strict (one spelling per proof), so a proof that parses re-encodes to the
same bytes. The extra data is not authenticated; nothing here gives it meaning.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from ._merkle import HASH_SIZE, ProofInvalid

__all__ = ["TlogProof", "parse_proof", "proof_text"]

_HEADER = "c2sp.org/tlog-proof@v1"
_MAX_HASHES = 64  # a tree of 2**64 entries is deeper than any log


@dataclass(frozen=True)
class TlogProof:
    index: int
    hashes: tuple[bytes, ...]
    note: str  # the checkpoint's signed note
    extra: bytes | None = None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ProofInvalid("a tlog-proof line is not base64") from None
    if _b64(data) != text:
        raise ProofInvalid("a tlog-proof line is not canonical base64")
    return data


def proof_text(proof: TlogProof) -> str:
    """The proof in its C2SP text form."""
    if proof.index < 0 or len(proof.hashes) > _MAX_HASHES:
        raise ProofInvalid("a tlog-proof has an index of at least 0 and at most 64 hashes")
    if any(len(h) != HASH_SIZE for h in proof.hashes):
        raise ProofInvalid("a tlog-proof hash is 32 bytes")
    lines = [_HEADER]
    if proof.extra is not None:
        lines.append(f"extra {_b64(proof.extra)}")
    lines.append(f"index {proof.index}")
    lines.extend(_b64(h) for h in proof.hashes)
    return "\n".join(lines) + "\n\n" + proof.note


def parse_proof(text: str) -> TlogProof:
    """A ``TlogProof`` from its text, or ``ProofInvalid``; the note is returned as
    given (its signatures are the verifier's to check)."""
    if not isinstance(text, str):
        raise ProofInvalid("a tlog-proof is text")
    head, sep, note = text.partition("\n\n")
    lines = head.split("\n")
    if not sep or not note or lines[0] != _HEADER:
        raise ProofInvalid("not a c2sp.org/tlog-proof@v1 proof")
    position = 1
    extra = None
    if position < len(lines) and lines[position].startswith("extra "):
        extra = _unb64(lines[position].removeprefix("extra "))
        position += 1
    if position >= len(lines) or not lines[position].startswith("index "):
        raise ProofInvalid("a tlog-proof has an index line")
    digits = lines[position].removeprefix("index ")
    if not digits.isascii() or not digits.isdigit() or (digits != "0" and digits[0] == "0"):
        raise ProofInvalid("a tlog-proof index is a decimal number")
    hashes = tuple(_unb64(line) for line in lines[position + 1 :])
    if len(hashes) > _MAX_HASHES or any(len(h) != HASH_SIZE for h in hashes):
        raise ProofInvalid("a tlog-proof has at most 64 hashes of 32 bytes")
    return TlogProof(index=int(digits), hashes=hashes, note=note, extra=extra)
