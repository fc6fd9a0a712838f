"""The audit's own record of answers obtained by governed inference: sealed like the
specimen's payloads.

Each answer is one file ``<home>/inference/<tenant>/<specimen>/<key>.ct``: AES-256-GCM
under a key derived (HKDF-SHA256) from the specimen's data key, its associated data the
specimen's place and the answer's key. The key is a keyed digest (HMAC under the same
derived key) of what was asked — boundary, endpoint, pinned model, API path and the
request body the endpoint received — so the file names say nothing of the content. An
audit asks its record first: a second audit that asks the same things asks the endpoint
nothing and gets the same answers, and a reviewer with the grant re-derives every figure.
Erasing the specimen destroys its data key, and with it every key derived from it; the
files go too (``erase``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import shutil
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ledger import canonical_json, loads

from .._errors import DecryptionFailed
from ..store import open_sealed, seal, validate_id

__all__ = ["InferenceRecord", "erase_inference_record", "record_key"]

_INFO = b"replay-enclave/v1/inference-record"


def record_key(data_key: bytes) -> bytes:
    """The inference record's key: derived from the specimen's data key, never stored."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(data_key)


def _folder(root: Path, tenant_id: str, specimen_id: str) -> Path:
    validate_id(tenant_id, what="tenant id")
    validate_id(specimen_id, what="specimen id")
    return root / "inference" / tenant_id / specimen_id


class InferenceRecord:
    """One specimen's sealed answers under a home's ``root``."""

    def __init__(self, root: Path, *, tenant_id: str, specimen_id: str, key: bytes) -> None:
        self._folder = _folder(root, tenant_id, specimen_id)
        self._cipher = AESGCM(key)
        self._mac_key = key
        self._aad = f"replay-enclave/v1/{tenant_id}/{specimen_id}/inference/".encode()

    def key_of(self, asked: dict[str, Any]) -> str:
        """The keyed digest an answer to ``asked`` is filed under."""
        return hmac.new(self._mac_key, canonical_json(asked), hashlib.sha256).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            blob = (self._folder / f"{key}.ct").read_bytes()
        except FileNotFoundError:
            return None
        answer = loads(open_sealed(self._cipher, blob, self._aad + key.encode()))
        if not isinstance(answer, dict):
            raise DecryptionFailed()
        return answer

    def put(self, key: str, answer: dict[str, Any]) -> None:
        self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        blob = seal(self._cipher, canonical_json(answer), self._aad + key.encode())
        path = self._folder / f"{key}.ct"
        tmp = path.with_name(f".{key}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


def erase_inference_record(root: Path, tenant_id: str, specimen_id: str) -> None:
    """Remove a specimen's answers (its data key's erasure already made them unreadable)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(_folder(root, tenant_id, specimen_id))
