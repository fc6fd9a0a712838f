"""Key providers, grants and keyed digests, and the certificate signing key. Keys never
leave a provider unwrapped except through a single-use, single-specimen grant."""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

from ._digests import DigestKeys, DigestSource, TenantDigester
from ._local import LocalGrant, LocalKeyProvider
from ._provider import Grant, KeyProvider, WrappedKey

if TYPE_CHECKING:  # deferred: only issuing signs; hvac/requests are for Vault mode only
    from ._signing_key import SigningKey
    from ._transit import TransitGrant, TransitKeyProvider, derivation_context
    from ._vault_client import VaultSession, VaultSettings

__getattr__ = deferred(
    __name__,
    globals(),
    {
        "SigningKey": "._signing_key",
        "TransitGrant": "._transit",
        "TransitKeyProvider": "._transit",
        "derivation_context": "._transit",
        "VaultSession": "._vault_client",
        "VaultSettings": "._vault_client",
    },
)

__all__ = [
    "DigestKeys",
    "DigestSource",
    "Grant",
    "KeyProvider",
    "LocalGrant",
    "LocalKeyProvider",
    "SigningKey",
    "TenantDigester",
    "TransitGrant",
    "TransitKeyProvider",
    "VaultSession",
    "VaultSettings",
    "WrappedKey",
    "derivation_context",
]
