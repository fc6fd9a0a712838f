"""The log key in Vault/OpenBao transit: Ed25519 signatures made inside the key server.

``vault setup`` creates ``<prefix>_log`` (Ed25519, non-exportable, no plaintext backup);
the broker identity — the governance plane, which signs checkpoints — may read its
public half and sign with it, nothing else (``policies/vault``). Transit signs an
Ed25519 message as given (no prehash), so the signature is the one a C2SP signed note
carries. Messages name the operation only.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from enclave._errors import EnclaveError, InfrastructureError, Refused

from ._vault_client import VaultSession, VaultSettings, vault_errors

__all__ = ["LOG_KEY_NAME", "TransitLogKey"]

LOG_KEY_NAME = "_log"  # after the key prefix; "_" starts no tenant id


def _refused() -> EnclaveError:
    return Refused("the key server refused the log key", code="log_key_refused")


class TransitLogKey:
    """One identity's use of the log key: its public half, and signing with it."""

    def __init__(self, settings: VaultSettings) -> None:
        self._client = VaultSession(settings).client
        name = settings.key_prefix + LOG_KEY_NAME
        self._key_path = f"/v1/{settings.mount}/keys/{name}"
        self._sign_path = f"/v1/{settings.mount}/sign/{name}"

    def public_key(self) -> Ed25519PublicKey:
        """The public half of the key's latest version."""
        with vault_errors("read log key", refusal=_refused):
            data = self._client().adapter.get(self._key_path)["data"]
            if data["type"] != "ed25519":
                raise ValueError("the log key is not an Ed25519 key")
            latest = data["keys"][str(int(data["latest_version"]))]
            raw = base64.b64decode(latest["public_key"], validate=True)
            return Ed25519PublicKey.from_public_bytes(raw)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message`` by the key's latest version."""
        with vault_errors("sign with log key", refusal=_refused):
            answer = self._client().adapter.post(
                self._sign_path, json={"input": base64.b64encode(message).decode()}
            )
            signature = str(answer["data"]["signature"])
        prefix, _, encoded = signature.rpartition(":")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raw = b""
        if not prefix.startswith("vault:v") or len(raw) != 64:
            raise InfrastructureError("unexpected key server answer during sign with log key")
        return raw
