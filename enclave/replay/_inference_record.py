"""The audit's own record of answers obtained by governed inference: sealed like the
specimen's payloads, and kept by the same payload store.

Each answer is AES-256-GCM under a key derived (HKDF-SHA256) from the specimen's data
key, its associated data the specimen's place and the answer's key. The key is a keyed
digest (HMAC under the same derived key) of what was asked — boundary, endpoint, pinned
model, API path and the request body the endpoint received — so the keys say nothing of
the content. The home's payload store keeps the sealed bytes beside the specimen's
(``PayloadBackend.answer``/``keep_answer``): the file store as
``<payloads>/<tenant>/<specimen>/answers/<key>.ct``, the database store as rows of
``inference_answers``, so batches on hosts sharing only the database serve and keep the
same answers. The first answer kept under a key stays. An audit asks its record first: a
second audit that asks the same things asks the endpoint nothing and gets the same
answers, and a reviewer with the grant re-derives every figure. Erasing the specimen
destroys its data key, and with it every key derived from it; the store's ``erase``
removes the answers with the specimen's ciphertext.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ledger import canonical_json, loads

from .._errors import DecryptionFailed
from ..store import open_sealed, seal, validate_id

if TYPE_CHECKING:
    from ..store import PayloadBackend

__all__ = ["InferenceRecord", "record_key"]

_INFO = b"replay-enclave/v1/inference-record"


def record_key(data_key: bytes) -> bytes:
    """The inference record's key: derived from the specimen's data key, never stored."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(data_key)


class InferenceRecord:
    """One specimen's sealed answers, kept by the home's payload store ``payloads``."""

    def __init__(
        self, payloads: PayloadBackend, *, tenant_id: str, specimen_id: str, key: bytes
    ) -> None:
        self._payloads = payloads
        self._tenant = validate_id(tenant_id, what="tenant id")
        self._specimen = validate_id(specimen_id, what="specimen id")
        self._cipher = AESGCM(key)
        self._mac_key = key
        self._aad = f"replay-enclave/v1/{tenant_id}/{specimen_id}/inference/".encode()

    def key_of(self, asked: dict[str, Any]) -> str:
        """The keyed digest an answer to ``asked`` is kept under."""
        return hmac.new(self._mac_key, canonical_json(asked), hashlib.sha256).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The answer kept under ``key``, or None; ``DecryptionFailed`` if it does not
        open under this record's key and place."""
        blob = self._payloads.answer(self._tenant, self._specimen, key)
        if blob is None:
            return None
        answer = loads(open_sealed(self._cipher, blob, self._aad + key.encode()))
        if not isinstance(answer, dict):
            raise DecryptionFailed()
        return answer

    def put(self, key: str, answer: dict[str, Any]) -> dict[str, Any]:
        """Seal ``answer`` and keep it under ``key``, unless the record holds one there
        already (an audit's batches run at once may both ask): the first one stays, and
        is returned — the answer to serve, so every sample can be re-derived."""
        blob = seal(self._cipher, canonical_json(answer), self._aad + key.encode())
        self._payloads.keep_answer(self._tenant, self._specimen, key, blob)
        kept = self.get(key)
        if kept is None:  # kept a moment ago: only an erasure meanwhile removes it
            raise DecryptionFailed()
        return kept
