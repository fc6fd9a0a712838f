"""The broker identity, one per tenant where the operator configured one.

Setup gives every tenant its own broker AppRole (``replay-enclave-broker-<tenant>``,
exported as ``REPLAY_ENCLAVE_VAULT_ROLE_ID_BROKER_<TENANT>`` / ``..._SECRET_ID_...``)
besides the governance role that carries all the tenants' policies. ``TenantBrokers``
uses a tenant's own identity when it is configured and the governance role otherwise,
so a service configured with per-tenant identities only cannot reach one tenant's key
while serving another, whatever its code asks: transit answers 403.

It is a broker only: it issues grants and admission bindings; capture, rotation and
rewrapping belong to their own identities and are refused here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NoReturn

from enclave._errors import BadInput, Refused
from enclave.keys._provider import WrappedKey
from enclave.keys._transit import TransitGrant, TransitKeyProvider
from enclave.keys._vault_client import VaultSettings

__all__ = ["TenantBrokers"]

SettingsFor = Callable[[str | None], VaultSettings | None]


class TenantBrokers:
    """``KeyProvider`` for the broker role, dispatching on the tenant."""

    name = "transit"

    def __init__(self, settings_for: SettingsFor) -> None:
        # settings_for(tenant): that tenant's own identity, or None when not configured;
        # settings_for(None): the governance role, or None
        self._settings_for = settings_for
        self._providers: dict[str | None, TransitKeyProvider] = {}

    def _for(self, tenant_id: str) -> TransitKeyProvider:
        for who in (tenant_id, None):
            if who in self._providers:
                return self._providers[who]
            settings = self._settings_for(who)
            if settings is not None:
                self._providers[who] = TransitKeyProvider(settings=settings)
                return self._providers[who]
        raise BadInput("Vault settings are incomplete (see `replay-enclave vault setup`)")

    def key_name(self, tenant_id: str) -> str:
        return self._for(tenant_id).key_name(tenant_id)

    def issue_grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> TransitGrant:
        return self._for(tenant_id).issue_grant(
            tenant_id, specimen_id, wrapped, job_id=job_id, ttl_seconds=ttl_seconds, now=now
        )

    def admission_mac(self, tenant_id: str, message_b64: str) -> str:
        return self._for(tenant_id).admission_mac(tenant_id, message_b64)

    def verify_admission_mac(self, tenant_id: str, message_b64: str, mac: str) -> bool:
        return self._for(tenant_id).verify_admission_mac(tenant_id, message_b64, mac)

    def new_data_key(self, tenant_id: str, specimen_id: str) -> tuple[bytes, WrappedKey]:
        _not_a_broker()

    def rewrap(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> WrappedKey:
        _not_a_broker()

    def rotate(self, tenant_id: str) -> int:
        _not_a_broker()

    def trim_versions(self, tenant_id: str, *, keep_from: int) -> None:
        _not_a_broker()


def _not_a_broker() -> NoReturn:
    raise Refused("the broker identity issues grants only", code="vault_refused")
