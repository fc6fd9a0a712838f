"""Everything a command needs, opened once from a home: ledger, keys, payloads, clock.

The payload store is chosen by configuration too: ``[payloads] store = "files"`` (the
home's folder, the default) or ``"database"`` (the ledger's database), bound by the home
(``Home.payload_store``).

The key provider is chosen by configuration: ``[keys] provider = "local"`` (the
embedded default) or ``"transit"`` (Vault/OpenBao, settings from the environment or the
home's ``[vault]`` section); the home binds the one first used (``Home.key_provider``).

Where a replay's grant comes from is ``Runtime.grants`` (``enclave.keys._provider.
GrantSource``): by default the broker identity of this process (``BrokerGrants``); a
replay worker in Vault mode is opened with ``ServiceGrants`` and ``vault_identities=False``
instead — it holds no Vault credential, and asking it for one is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ._errors import BadInput, Refused
from ._home import Home
from .keys import (
    BrokerGrants,
    DigestKeys,
    DigestSource,
    GrantSource,
    KeyProvider,
    LocalKeyProvider,
)
from .store import GuardedPayloads, PayloadBackend, PayloadStore

if TYPE_CHECKING:  # the database layer is imported when a runtime is opened
    from ledger import Ledger
    from ledger.certificates import CertificateSigner

    from .keys import TransitSigningKey, VaultSettings

__all__ = ["Runtime", "utc_now"]


def utc_now() -> datetime:
    """The system clock as an aware UTC datetime: read it once at a program's edge and
    pass it on as ``now`` (nothing below the edge reads the clock)."""
    return datetime.now(UTC)


def _vault_addr(home: Home, env: dict[str, str]) -> str | None:
    addr = env.get("VAULT_ADDR") or home.config.get("vault", {}).get("addr")
    return addr if isinstance(addr, str) and addr else None


def _vault_settings(
    home: Home, env: dict[str, str], role: str, tenant: str | None = None
) -> VaultSettings | None:
    """One Vault identity's settings, or None where they are incomplete."""
    from .keys import VaultSettings

    table = dict(home.config.get("vault", {}))
    if not table.get("addr") and home.backend.get("vault_addr"):
        table["addr"] = home.backend["vault_addr"]  # the address the home was bound to
    try:
        return VaultSettings.from_env_or_config(env, table, role=role, tenant=tenant)  # type: ignore[arg-type]
    except ValueError:
        return None


def _incomplete() -> BadInput:
    return BadInput("Vault settings are incomplete (see `replay-enclave vault setup`)")


def _transit(home: Home, env: dict[str, str], role: str) -> KeyProvider:
    from .keys import TenantBrokers, TransitKeyProvider

    if role == "broker":  # a tenant's own broker identity where one is configured
        return TenantBrokers(lambda tenant: _vault_settings(home, env, role, tenant))
    settings = _vault_settings(home, env, role)
    if settings is None:
        raise _incomplete()
    return TransitKeyProvider(settings=settings)


@dataclass
class Runtime:
    home: Home
    ledger: Ledger
    digests: DigestSource
    payloads: GuardedPayloads  # the home's store, under its payload lock
    provider: str = "local"
    env: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], datetime] = field(default=utc_now)
    grant_source: GrantSource | None = None
    vault_identities: bool = True
    # who signs certificates: the home's own key unless set (a worker on another host
    # asks the service, ``enclave.keys._service_link``)
    signer: CertificateSigner | None = None
    _identities: dict[str, KeyProvider] = field(default_factory=dict)

    def _identity(self, role: str) -> KeyProvider:
        # Each Vault identity is built on first use: a capture-only process never
        # needs (or holds) the broker's credentials, and vice versa.
        if self.provider != "local" and not self.vault_identities:
            raise Refused("this process holds no Vault identity", code="no_vault_identity")
        if role not in self._identities:
            if self.provider == "local":
                self._identities[role] = LocalKeyProvider(keys_dir=self.home.keys_dir)
            else:
                self._identities[role] = _transit(self.home, self.env, role)
        return self._identities[role]

    @property
    def keys(self) -> KeyProvider:
        """The capture identity: new data keys only."""
        return self._identity("capture")

    @property
    def broker(self) -> KeyProvider:
        """The grant broker identity: single-use grants for replay jobs."""
        return self._identity("broker")

    @property
    def grants(self) -> GrantSource:
        """Where a replay's single-use grant comes from (see the module docstring)."""
        if self.grant_source is None:
            self.grant_source = BrokerGrants(lambda: self.broker, name=self.provider)
        return self.grant_source

    @property
    def rotator(self) -> KeyProvider:
        """The rotation identity: rotate, rewrap, trim."""
        return self._identity("rotate")

    def transit_signing_key(self, name: str) -> TransitSigningKey:
        """A signing key in transit (``keys.LOG_KEY_NAME``, ``ISSUER_KEY_NAME``), used as
        the governance plane (the broker's own identity): Vault mode only."""
        from .keys import TransitSigningKey

        if self.provider == "local":
            raise BadInput("signing keys are in transit only in Vault mode")
        if not self.vault_identities:
            raise Refused("this process holds no Vault identity", code="no_vault_identity")
        settings = _vault_settings(self.home, self.env, "broker")
        if settings is None:
            raise _incomplete()
        return TransitSigningKey(settings, name)

    @classmethod
    def open(
        cls,
        home: Home,
        *,
        env: dict[str, str] | None = None,
        grant_source: GrantSource | None = None,
        vault_identities: bool = True,
        payloads_as_bound: bool = False,
    ) -> Runtime:
        """``payloads_as_bound``: open the payload store the home is bound to whatever
        the configuration asks for (``payloads migrate``, which moves them)."""
        from ledger import Ledger

        env = dict(os.environ) if env is None else env
        url = home.ledger_url(env)  # refused here on a mismatch, before anything is opened
        provider = home.key_provider(env)
        if payloads_as_bound:
            payload_store = home.bound_payloads() if home.backend else "files"
        else:
            payload_store = home.payload_store(env)
        home.private_ledger_file(url)
        ledger = Ledger.open(url, head_path=home.head_path)
        try:
            ledger.migrate()
            vault_addr = _vault_addr(home, env) if provider == "transit" else None
            home.bind_backend(
                ledger_url=url, keys=provider, vault_addr=vault_addr, payloads=payload_store
            )
        except BaseException:
            ledger.close()
            raise
        backend: PayloadBackend
        if payload_store == "database":  # the database layer is loaded by then
            from .store import DatabasePayloadStore

            backend = DatabasePayloadStore(engine=ledger.engine)
        else:
            backend = PayloadStore(root=home.payloads_dir)
        payloads = GuardedPayloads(
            backend, home_root=home.root, store=payload_store, bound=home.bound_payloads
        )
        return cls(
            home=home,
            ledger=ledger,
            digests=DigestKeys(keys_dir=home.keys_dir),
            payloads=payloads,
            provider=provider,
            env=env,
            grant_source=grant_source,
            vault_identities=vault_identities,
        )

    def close(self) -> None:
        self.payloads.release()
        self.ledger.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
