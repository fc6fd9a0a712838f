"""AES-256-GCM. ``seal`` draws a fresh 96-bit random nonce per encryption; the payload
store's writer, the only encryptor under a specimen's key, uses counter nonces instead.

Associated data binds a ciphertext to its place (tenant/specimen/step/field); a
ciphertext moved elsewhere, a flipped byte or a wrong key all fail the same opaque way.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .._errors import DecryptionFailed

__all__ = ["NONCE_BYTES", "aad_prefix", "field_aad", "open_sealed", "seal"]

NONCE_BYTES = 12


def aad_prefix(tenant_id: str, specimen_id: str) -> bytes:
    """The constant head of every field AAD of one specimen (computed once per writer)."""
    return f"replay-enclave/v1/{tenant_id}/{specimen_id}/".encode()


def field_aad(tenant_id: str, specimen_id: str, seq: int, side: str, path: str) -> bytes:
    return aad_prefix(tenant_id, specimen_id) + f"{seq}/{side}/{path}".encode()


def seal(cipher: AESGCM, plaintext: bytes, aad: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + cipher.encrypt(nonce, plaintext, aad)


def open_sealed(cipher: AESGCM, blob: bytes, aad: bytes) -> bytes:
    if len(blob) < NONCE_BYTES + 16:
        raise DecryptionFailed()
    try:
        return cipher.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], aad)
    except (InvalidTag, ValueError):
        raise DecryptionFailed() from None
