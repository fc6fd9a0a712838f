"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, and the C2SP checkpoint
(c2sp.org/tlog-checkpoint) a log signs as one.

A note is UTF-8 text ending in a newline, a blank line, then one line per signature:
``— <key name> base64(key ID ‖ signature)``. The key ID of an Ed25519 key is the first
four bytes of SHA-256(key name ‖ 0x0A ‖ 0x01 ‖ public key); a verifier key is written
``<name>+<key ID hex>+base64(0x01 ‖ public key)``. A checkpoint's text is the log's
origin line, its size in decimal and its root hash in base64, each on a line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ._merkle import HASH_SIZE

__all__ = [
    "Checkpoint",
    "NoteInvalid",
    "NoteVerifier",
    "checkpoint_text",
    "note_key_id",
    "open_note",
    "parse_checkpoint",
    "sign_note",
]

_ED25519 = b"\x01"
_DASH = "\u2014 "
_MAX_SIGNATURES = 100


class NoteInvalid(ValueError):
    """A note, key or checkpoint that is malformed or does not verify."""


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _check_name(name: str) -> None:
    if not name or any(c.isspace() or c == "+" for c in name) or not name.isprintable():
        raise NoteInvalid("a key name is non-empty, with no space and no '+'")


def note_key_id(name: str, key: Ed25519PublicKey) -> bytes:
    """The four-byte ID of an Ed25519 key named ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + _ED25519 + _raw(key)).digest()[:4]


@dataclass(frozen=True)
class NoteVerifier:
    """A trusted Ed25519 key of a note signer: its name and public key."""

    name: str
    key: Ed25519PublicKey

    @property
    def key_id(self) -> bytes:
        return note_key_id(self.name, self.key)

    def encode(self) -> str:
        """``<name>+<key ID hex>+base64(0x01 ‖ public key)``."""
        material = base64.b64encode(_ED25519 + _raw(self.key)).decode()
        return f"{self.name}+{self.key_id.hex()}+{material}"

    @classmethod
    def parse(cls, text: str) -> NoteVerifier:
        name, key, key_hex = parse_vkey(text, _ED25519)
        verifier = cls(name, key)
        if key_hex != verifier.key_id.hex():
            raise NoteInvalid("the verifier key's ID does not match its key")
        return verifier


def parse_vkey(text: str, kind: bytes) -> tuple[str, Ed25519PublicKey, str]:
    """A C2SP vkey ``<name>+<key ID hex>+base64(kind ‖ public key)``: its name, key and
    the key ID as written (for the caller to check against the key's own)."""
    name, _, rest = text.partition("+")
    key_hex, _, material = rest.partition("+")
    _check_name(name)
    try:
        raw = base64.b64decode(material, validate=True)
    except (binascii.Error, ValueError):
        raise NoteInvalid("the verifier key is not base64") from None
    if len(raw) != 33 or raw[:1] != kind:
        raise NoteInvalid("not an Ed25519 key of this kind")
    return name, Ed25519PublicKey.from_public_bytes(raw[1:]), key_hex


def _check_text(text: str) -> None:
    if not text.endswith("\n") or any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteInvalid("a note's text ends in a newline and holds no control character")


def sign_note(text: str, signer: NoteVerifier, sign: Callable[[bytes], bytes]) -> str:
    """``text`` signed by ``signer``'s key: ``sign`` returns the Ed25519 signature of
    the bytes it is given (a private key's ``sign``, or a key service's)."""
    _check_name(signer.name)
    _check_text(text)
    signature = sign(text.encode())
    try:
        signer.key.verify(signature, text.encode())
    except InvalidSignature:
        raise NoteInvalid("the signature is not the signer's key's") from None
    encoded = base64.b64encode(signer.key_id + signature).decode()
    return f"{text}\n{_DASH}{signer.name} {encoded}\n"


def open_note(note: str, verifiers: list[NoteVerifier]) -> tuple[str, list[NoteVerifier]]:
    """The text of ``note`` and the trusted signers whose signatures on it verify.

    Signatures by unknown keys are ignored; one by a known key that fails, or none by a
    known key at all, rejects the note (``NoteInvalid``)."""
    text, sep, signatures = note.rpartition("\n\n")
    if not sep or not signatures.endswith("\n"):
        raise NoteInvalid("not a signed note")
    text += "\n"
    _check_text(text)
    lines = signatures[:-1].split("\n")
    if len(lines) > _MAX_SIGNATURES:
        raise NoteInvalid("too many signatures")
    known = {(v.name, v.key_id): v for v in verifiers}
    verified: list[NoteVerifier] = []
    for line in lines:
        name, signature = _signature_line(line)
        verifier = known.get((name, signature[:4]))
        if verifier is None:
            continue
        try:
            verifier.key.verify(signature[4:], text.encode())
        except InvalidSignature:
            raise NoteInvalid(f"the signature of {name} does not verify") from None
        if verifier not in verified:
            verified.append(verifier)
    if not verified:
        raise NoteInvalid("no trusted key signed the note")
    return text, verified


def _signature_line(line: str) -> tuple[str, bytes]:
    if not line.startswith(_DASH):
        raise NoteInvalid("a signature line starts with an em dash")
    name, sep, encoded = line[len(_DASH) :].partition(" ")
    _check_name(name)
    try:
        signature = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise NoteInvalid("a signature is not base64") from None
    if not sep or len(signature) < 5:
        raise NoteInvalid("a signature line is malformed")
    return name, signature


@dataclass(frozen=True)
class Checkpoint:
    """A log's state: its origin, its size and the root of its Merkle tree."""

    origin: str
    size: int
    root: bytes


def checkpoint_text(checkpoint: Checkpoint) -> str:
    """The C2SP checkpoint body (no extension lines)."""
    _check_text(checkpoint.origin + "\n")
    if not checkpoint.origin or "\n" in checkpoint.origin or checkpoint.size < 0:
        raise NoteInvalid("a checkpoint has a one-line origin and a size of at least 0")
    if len(checkpoint.root) != HASH_SIZE:
        raise NoteInvalid("a checkpoint's root is 32 bytes")
    root = base64.b64encode(checkpoint.root).decode()
    return f"{checkpoint.origin}\n{checkpoint.size}\n{root}\n"


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint body (as ``open_note`` returns it); extension lines are ignored."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise NoteInvalid("a checkpoint has an origin, a size and a root, a line each")
    origin, size, root = lines[0], lines[1], lines[2]
    if not origin or not size.isdigit() or (size != "0" and size.startswith("0")):
        raise NoteInvalid("a checkpoint's size is a decimal number")
    try:
        digest = base64.b64decode(root, validate=True)
    except (binascii.Error, ValueError):
        raise NoteInvalid("a checkpoint's root is not base64") from None
    if len(digest) != HASH_SIZE:
        raise NoteInvalid("a checkpoint's root is 32 bytes")
    return Checkpoint(origin=origin, size=int(size), root=digest)
