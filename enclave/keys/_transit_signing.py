"""Signing keys in Vault/OpenBao transit: Ed25519 signatures made inside the key server.

``vault setup`` creates ``<prefix>_log`` (the log key: signs the ledger's checkpoints)
and ``<prefix>_issuer`` (the issuer key: signs certificates and release reports), each
Ed25519, non-exportable, with no plaintext backup; the broker identity — the governance
plane, which signs both — may read their public halves and sign with them, nothing else
(``policies/vault``). Transit signs an Ed25519 message as given (no prehash), so the
signature is the one a C2SP signed note or a DSSE envelope carries. Messages name the
key and the operation only.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from enclave._errors import EnclaveError, InfrastructureError, Refused

from ._key_names import SIGNING_KEY_NAMES
from ._vault_client import VaultSession, VaultSettings, vault_errors

__all__ = ["TransitSigningKey"]


class TransitSigningKey:
    """One identity's use of one signing key: its public half, and signing with it."""

    def __init__(self, settings: VaultSettings, name: str) -> None:
        if name not in SIGNING_KEY_NAMES:
            raise ValueError("not a transit signing key name")
        self._what = SIGNING_KEY_NAMES[name]
        self._client = VaultSession(settings).client
        full = settings.key_prefix + name
        self._key_path = f"/v1/{settings.mount}/keys/{full}"
        self._sign_path = f"/v1/{settings.mount}/sign/{full}"

    def _refused(self) -> EnclaveError:
        code = self._what.replace(" ", "_") + "_refused"
        return Refused(f"the key server refused the {self._what}", code=code)

    def public_key(self) -> Ed25519PublicKey:
        """The public half of the key's latest version."""
        with vault_errors(f"read {self._what}", refusal=self._refused):
            data = self._client().adapter.get(self._key_path)["data"]
            if data["type"] != "ed25519":
                raise ValueError("the key is not an Ed25519 key")
            latest = data["keys"][str(int(data["latest_version"]))]
            raw = base64.b64decode(latest["public_key"], validate=True)
            return Ed25519PublicKey.from_public_bytes(raw)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message`` by the key's latest version."""
        what = f"sign with {self._what}"
        with vault_errors(what, refusal=self._refused):
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
            raise InfrastructureError(f"unexpected key server answer during {what}")
        return raw
