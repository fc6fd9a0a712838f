"""Who signs a certificate: the hook an issuer implements, and the local one.

``CertificateSigner`` is the one-hook extension point the enclave calls to sign an
audit's certificate; ``LocalSigner`` signs with any ``Signer`` (the enclave's
``SigningKey`` is one), naming its keyid as the predicate's issuer. Both go through
``build_statement`` and ``sign_statement``, so nothing invalid is signed.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._keys import Signer
from ._statement import build_statement, sign_statement

__all__ = ["CertificateSigner", "LocalSigner"]


class CertificateSigner(Protocol):
    """Signs one audit's certificate: names itself as the predicate's issuer, checks the
    statement (``sign_statement``) and returns the DSSE envelope."""

    def sign_certificate(
        self, *, specimen_id: str, manifest_digest: str, predicate: dict[str, Any]
    ) -> dict[str, Any]: ...


class LocalSigner:
    """A key held in this process (the home's own Ed25519 key)."""

    def __init__(self, key: Signer) -> None:
        self._key = key

    def sign_certificate(
        self, *, specimen_id: str, manifest_digest: str, predicate: dict[str, Any]
    ) -> dict[str, Any]:
        predicate = {**predicate, "issuer": self._key.keyid}
        statement = build_statement(
            specimen_id=specimen_id, manifest_digest=manifest_digest, predicate=predicate
        )
        return sign_statement(statement, self._key)
