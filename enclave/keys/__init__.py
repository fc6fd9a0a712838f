"""Key providers, grants and keyed digests. Keys never leave a provider unwrapped
except through a single-use, single-specimen grant."""

from ._digests import DigestKeys, TenantDigester
from ._local import LocalGrant, LocalKeyProvider
from ._provider import Grant, KeyProvider, WrappedKey

__all__ = [
    "DigestKeys",
    "Grant",
    "KeyProvider",
    "LocalGrant",
    "LocalKeyProvider",
    "TenantDigester",
    "WrappedKey",
]
