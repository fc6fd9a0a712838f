"""Public keys as the verifier sees them, and what a signer must offer.

``keyid`` is ``"sha256:" + hex(sha256(raw 32-byte public key))``. Private keys live with
whoever signs (the enclave's ``SigningKey``); verifying needs none.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._errors import BadCertificateInput

__all__ = ["Signer", "keyid_of", "load_public_key_pem"]


class Signer(Protocol):
    """An Ed25519 key able to sign: its keyid and raw signatures over bytes."""

    @property
    def keyid(self) -> str: ...

    def sign(self, data: bytes) -> bytes: ...


def keyid_of(public_key: Ed25519PublicKey) -> str:
    """``sha256:<hex>`` of the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def load_public_key_pem(pem: bytes) -> Ed25519PublicKey:
    """Parse a PEM (SubjectPublicKeyInfo) Ed25519 public key, or ``BadCertificateInput``."""
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise BadCertificateInput("not a PEM public key") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise BadCertificateInput("public key is not Ed25519")
    return key
