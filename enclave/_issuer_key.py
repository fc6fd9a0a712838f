"""The certificate issuer's signing identity: the key that signs certificates and
release reports.

Kept apart from the log's key (``_log_key``): a certificate vouches for one audit, a
checkpoint for the whole log. Where it lives:

- a local home: an Ed25519 key in the home (``keys/signing-key.pem``, created 0600 on
  first use, its public half beside it: ``signing-key.pem.pub``);
- a Vault-mode home: the transit key ``<prefix>_issuer``
  (``enclave.keys.TransitSigningKey``), which never leaves the key server. Its public
  half is pinned in the home on first use (``keys/issuer-key-transit.pub``,
  ``_pinned_transit``), and every signature is checked against the pin before it is
  used. A Vault-mode home that issued with a local key before keeps that key: an
  issuer's key is what its certificates are verified with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._pinned_transit import pinned_transit_key

if TYPE_CHECKING:
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ._home import Home
    from ._runtime import Runtime

__all__ = ["IssuerKey", "issuer_public_path"]

TRANSIT_PIN = "issuer-key-transit.pub"


@dataclass(frozen=True)
class IssuerKey:
    """The home's issuer key as a ``ledger.certificates.Signer``: its keyid, and raw
    Ed25519 signatures made wherever the key lives."""

    public_key: Ed25519PublicKey
    _sign: Callable[[bytes], bytes]

    @property
    def keyid(self) -> str:
        from ledger.certificates import keyid_of

        return keyid_of(self.public_key)

    def sign(self, data: bytes) -> bytes:
        return self._sign(data)

    @classmethod
    def of(cls, runtime: Runtime) -> IssuerKey:
        """The home's issuer key, made on first use (locally, or its pin in Vault mode)."""
        from .keys import ISSUER_KEY_NAME, SigningKey

        home = runtime.home
        if home.signing_key_path.is_file() or runtime.provider == "local":
            key = SigningKey.load_or_create(home.signing_key_path)
            return cls(key.public_key, key.sign)
        pin = home.keys_dir / TRANSIT_PIN
        public, sign = pinned_transit_key(runtime, ISSUER_KEY_NAME, pin, missing=None)
        return cls(public, sign)


def issuer_public_path(home: Home) -> Path:
    """The PEM file of the issuer's public half: the local key's while the home has one,
    else the transit key's pin once it has that (whatever this process's provider)."""
    pin = home.keys_dir / TRANSIT_PIN
    if not home.signing_key_path.is_file() and pin.is_file():
        return pin
    return home.keys_dir / f"{home.signing_key_path.name}.pub"
