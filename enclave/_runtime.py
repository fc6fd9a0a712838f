"""Everything a command needs, opened once from a home: ledger, keys, payloads, clock.

The key provider is chosen by configuration alone: ``[keys] provider = "local"`` (the
embedded default) or ``"transit"`` (Vault/OpenBao, settings from the environment or the
home's ``[vault]`` section).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ledger import Ledger

from ._errors import BadInput
from ._home import Home
from .keys import DigestKeys, KeyProvider, LocalKeyProvider
from .store import PayloadStore

__all__ = ["Runtime", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _key_provider(home: Home, env: dict[str, str]) -> KeyProvider:
    configured = home.config.get("keys", {}).get("provider", "local")
    provider = env.get("REPLAY_ENCLAVE_KEY_PROVIDER", configured)
    if provider == "local":
        return LocalKeyProvider(keys_dir=home.keys_dir)
    if provider == "transit":
        from .keys._transit import TransitKeyProvider
        from .keys._vault_client import VaultSettings

        settings = VaultSettings.from_env_or_config(env, home.config.get("vault"))
        return TransitKeyProvider.from_settings(settings)  # type: ignore[no-any-return]
    raise BadInput("unknown key provider in config (use 'local' or 'transit')")


@dataclass
class Runtime:
    home: Home
    ledger: Ledger
    keys: KeyProvider
    digests: DigestKeys
    payloads: PayloadStore
    clock: Callable[[], datetime] = field(default=utc_now)

    @classmethod
    def open(cls, home: Home, *, env: dict[str, str] | None = None) -> Runtime:
        env = dict(os.environ) if env is None else env
        ledger = Ledger.open(home.ledger_url(env), head_path=home.head_path)
        ledger.migrate()
        return cls(
            home=home,
            ledger=ledger,
            keys=_key_provider(home, env),
            digests=DigestKeys(keys_dir=home.keys_dir),
            payloads=PayloadStore(root=home.payloads_dir),
        )

    def close(self) -> None:
        self.ledger.close()
