"""C2SP checkpoint cosignatures (c2sp.org/tlog-cosignature), the Ed25519 kind.

A witness that verified a checkpoint consistent with everything it saw of that log adds
a note signature line ``— <witness name> base64(key ID ‖ timestamp ‖ signature)``: the
key ID is SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4], the timestamp 8 bytes big-endian
(POSIX seconds), and the Ed25519 signature is over ``cosignature/v1\\ntime <timestamp>\\n``
followed by the checkpoint's text. Lines of unknown keys are ignored, as in any note.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ._note import NoteInvalid, _check_text, _signature_line, parse_vkey

__all__ = ["WitnessVerifier", "cosign", "cosigned_by"]

_COSIGNATURE = b"\x04"
_MAX_TIME = 2**63 - 1


def _message(text: str, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


@dataclass(frozen=True)
class WitnessVerifier:
    """A trusted witness: its name and Ed25519 public key."""

    name: str
    key: Ed25519PublicKey

    @property
    def key_id(self) -> bytes:
        raw = self.key.public_bytes(Encoding.Raw, PublicFormat.Raw)
        return hashlib.sha256(self.name.encode() + b"\n" + _COSIGNATURE + raw).digest()[:4]

    def encode(self) -> str:
        """``<name>+<key ID hex>+base64(0x04 ‖ public key)`` (a C2SP vkey)."""
        raw = self.key.public_bytes(Encoding.Raw, PublicFormat.Raw)
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(_COSIGNATURE + raw).decode()}"

    @classmethod
    def parse(cls, text: str) -> WitnessVerifier:
        name, key, key_hex = parse_vkey(text, _COSIGNATURE)
        verifier = cls(name, key)
        if key_hex != verifier.key_id.hex():
            raise NoteInvalid("the witness key's ID does not match its key")
        return verifier


def cosign(
    text: str, witness: WitnessVerifier, sign: Callable[[bytes], bytes], timestamp: int
) -> str:
    """The cosignature line (with its newline) of ``witness`` on a checkpoint's text."""
    _check_text(text)
    if not 0 <= timestamp <= _MAX_TIME:
        raise NoteInvalid("a cosignature's time is 0 to 2**63 - 1")
    signature = sign(_message(text, timestamp))
    try:
        witness.key.verify(signature, _message(text, timestamp))
    except InvalidSignature:
        raise NoteInvalid("the cosignature is not the witness key's") from None
    blob = witness.key_id + timestamp.to_bytes(8, "big") + signature
    return f"\u2014 {witness.name} {base64.b64encode(blob).decode()}\n"


def cosigned_by(note: str, witnesses: list[WitnessVerifier]) -> list[WitnessVerifier]:
    """The trusted witnesses whose cosignatures on ``note`` verify; one by a trusted key
    that fails rejects the note (``NoteInvalid``), as a failed signature does."""
    text, sep, signatures = note.rpartition("\n\n")
    if not sep or not signatures.endswith("\n"):
        raise NoteInvalid("not a signed note")
    text += "\n"
    known = {(w.name, w.key_id): w for w in witnesses}
    found: list[WitnessVerifier] = []
    for line in signatures[:-1].split("\n"):
        name, blob = _signature_line(line)
        witness = known.get((name, blob[:4]))
        if witness is None:
            continue
        if len(blob) != 4 + 8 + 64:
            raise NoteInvalid(f"the cosignature of {name} is malformed")
        timestamp = int.from_bytes(blob[4:12], "big")
        try:
            if timestamp > _MAX_TIME:
                raise InvalidSignature
            witness.key.verify(blob[12:], _message(text, timestamp))
        except InvalidSignature:
            raise NoteInvalid(f"the cosignature of {name} does not verify") from None
        if witness not in found:
            found.append(witness)
    return found
