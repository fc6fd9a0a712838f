"""The Ed25519 key that signs certificates and release reports (the verifier in
``ledger.certificates`` needs only its public half).

Invariants:

1. The private key file is created atomically with mode 0600 (written to a private
   temporary file, then hard-linked into place, so a concurrent creator either wins
   or loads the finished file). A key file readable by group or others is refused.
2. ``<path>.pub`` holds the PEM public key and is rewritten whenever it is missing or
   does not match the private key.
3. ``keyid`` is ``ledger.certificates.keyid_of`` of the public key.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from ledger.certificates import keyid_of

from .._errors import BadInput, InfrastructureError

__all__ = ["SigningKey"]


class SigningKey:
    """An Ed25519 private key with its derived public identity."""

    __slots__ = ("_private", "_public", "_keyid")

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        if not isinstance(private_key, Ed25519PrivateKey):
            raise TypeError("private_key must be an Ed25519PrivateKey")
        self._private = private_key
        self._public = private_key.public_key()
        self._keyid = keyid_of(self._public)

    def __repr__(self) -> str:
        return f"SigningKey(keyid={self._keyid!r})"

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> SigningKey:
        """From a 32-byte Ed25519 seed (deterministic keys for fixtures and tests)."""
        try:
            return cls(Ed25519PrivateKey.from_private_bytes(raw))
        except ValueError as exc:
            raise BadInput("an Ed25519 seed is 32 bytes") from exc

    @classmethod
    def load_or_create(cls, path: Path) -> SigningKey:
        """Load the PEM private key at ``path``, creating it (0600) if it is missing."""
        path = Path(path)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not path.exists():
                cls._create(path)
            key = cls._load(path)
            key._write_public(Path(str(path) + ".pub"))
        except OSError as exc:
            raise InfrastructureError("signing key file could not be read or written") from exc
        return key

    @classmethod
    def _create(cls, path: Path) -> None:
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process created it first; load theirs
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def _load(cls, path: Path) -> SigningKey:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise BadInput("signing key file must not be readable by group or others (chmod 600)")
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise BadInput("signing key file is not an unencrypted PEM private key") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise BadInput("signing key file does not hold an Ed25519 key")
        return cls(key)

    def _write_public(self, pub_path: Path) -> None:
        pem = self.public_key_pem
        if pub_path.exists() and pub_path.read_bytes() == pem:
            return
        tmp = pub_path.with_name(f".{pub_path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        tmp.write_bytes(pem)
        os.chmod(tmp, 0o644)
        os.replace(tmp, pub_path)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._public

    @property
    def public_key_pem(self) -> bytes:
        return self._public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @property
    def keyid(self) -> str:
        return self._keyid

    def sign(self, data: bytes) -> bytes:
        """Raw Ed25519 signature (deterministic: same key and data, same bytes)."""
        return self._private.sign(data)
