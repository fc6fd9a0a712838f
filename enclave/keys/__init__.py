"""Key providers, grants and keyed digests. Keys never leave a provider unwrapped
except through a single-use, single-specimen grant."""

from ._digests import DigestKeys, TenantDigester
from ._local import LocalGrant, LocalKeyProvider
from ._provider import Grant, KeyProvider, WrappedKey
from ._transit import TransitGrant, TransitKeyProvider, derivation_context
from ._vault_client import VaultSession, VaultSettings

__all__ = [
    "DigestKeys",
    "Grant",
    "KeyProvider",
    "LocalGrant",
    "LocalKeyProvider",
    "TenantDigester",
    "TransitGrant",
    "TransitKeyProvider",
    "VaultSession",
    "VaultSettings",
    "WrappedKey",
    "derivation_context",
]
