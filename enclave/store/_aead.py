"""AES-256-GCM with a fresh 96-bit random nonce per encryption.

Associated data binds a ciphertext to its place (tenant/specimen/step/field); a
ciphertext moved elsewhere, a flipped byte or a wrong key all fail the same opaque way.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .._errors import DecryptionFailed

__all__ = ["seal", "open_sealed", "field_aad"]

NONCE_BYTES = 12


def field_aad(tenant_id: str, specimen_id: str, seq: int, side: str, path: str) -> bytes:
    return f"replay-enclave/v1/{tenant_id}/{specimen_id}/{seq}/{side}/{path}".encode()


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
