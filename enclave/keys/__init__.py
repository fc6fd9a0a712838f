"""Key providers, grants and keyed digests, and the certificate signing key. Keys never
leave a provider unwrapped except through a single-use, single-specimen grant.

Every name is imported on first use: only issuing signs, and ``hvac``/``requests`` are
for Vault mode only.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._digests import DigestKeys as DigestKeys
    from ._digests import DigestSource as DigestSource
    from ._digests import TenantDigester as TenantDigester
    from ._key_names import ISSUER_KEY_NAME as ISSUER_KEY_NAME
    from ._key_names import LOG_KEY_NAME as LOG_KEY_NAME
    from ._key_names import SIGNING_KEY_NAMES as SIGNING_KEY_NAMES
    from ._local import LocalGrant as LocalGrant
    from ._local import LocalKeyProvider as LocalKeyProvider
    from ._provider import BrokerGrants as BrokerGrants
    from ._provider import Grant as Grant
    from ._provider import GrantSource as GrantSource
    from ._provider import KeyProvider as KeyProvider
    from ._provider import WrappedKey as WrappedKey
    from ._service_grants import GrantServiceUnavailable as GrantServiceUnavailable
    from ._service_grants import ServiceGrants as ServiceGrants
    from ._signing_key import SigningKey as SigningKey
    from ._tenant_brokers import TenantBrokers as TenantBrokers
    from ._transit import TransitGrant as TransitGrant
    from ._transit import TransitKeyProvider as TransitKeyProvider
    from ._transit import derivation_context as derivation_context
    from ._transit_signing import TransitSigningKey as TransitSigningKey
    from ._vault_client import ENV_PREFIX as ENV_PREFIX
    from ._vault_client import ROLES as ROLES
    from ._vault_client import KeyServerUnavailable as KeyServerUnavailable
    from ._vault_client import Role as Role
    from ._vault_client import VaultSession as VaultSession
    from ._vault_client import VaultSettings as VaultSettings
    from ._vault_client import admin_client as admin_client
    from ._vault_client import anonymous_adapter as anonymous_adapter
    from ._vault_client import role_env_names as role_env_names
    from ._vault_client import vault_errors as vault_errors

_FRONT = {
    "DigestKeys": "._digests",
    "DigestSource": "._digests",
    "TenantDigester": "._digests",
    "ISSUER_KEY_NAME": "._key_names",
    "LOG_KEY_NAME": "._key_names",
    "SIGNING_KEY_NAMES": "._key_names",
    "LocalGrant": "._local",
    "LocalKeyProvider": "._local",
    "BrokerGrants": "._provider",
    "Grant": "._provider",
    "GrantSource": "._provider",
    "KeyProvider": "._provider",
    "WrappedKey": "._provider",
    "GrantServiceUnavailable": "._service_grants",
    "ServiceGrants": "._service_grants",
    "SigningKey": "._signing_key",
    "TenantBrokers": "._tenant_brokers",
    "TransitGrant": "._transit",
    "TransitKeyProvider": "._transit",
    "derivation_context": "._transit",
    "TransitSigningKey": "._transit_signing",
    "ENV_PREFIX": "._vault_client",
    "ROLES": "._vault_client",
    "KeyServerUnavailable": "._vault_client",
    "Role": "._vault_client",
    "VaultSession": "._vault_client",
    "VaultSettings": "._vault_client",
    "admin_client": "._vault_client",
    "anonymous_adapter": "._vault_client",
    "role_env_names": "._vault_client",
    "vault_errors": "._vault_client",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
