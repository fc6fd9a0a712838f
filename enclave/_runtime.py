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
from typing import TYPE_CHECKING

from ._errors import BadInput
from ._home import Home
from .keys import DigestKeys, KeyProvider, LocalKeyProvider
from .store import PayloadStore

if TYPE_CHECKING:  # the database layer is imported when a runtime is opened
    from ledger import Ledger

__all__ = ["Runtime", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _provider_name(home: Home, env: dict[str, str]) -> str:
    configured = home.config.get("keys", {}).get("provider", "local")
    name = env.get("REPLAY_ENCLAVE_KEY_PROVIDER", configured)
    if name not in ("local", "transit"):
        raise BadInput("unknown key provider in config (use 'local' or 'transit')")
    return str(name)


def _transit(home: Home, env: dict[str, str], role: str) -> KeyProvider:
    from .keys import TransitKeyProvider, VaultSettings

    try:
        settings = VaultSettings.from_env_or_config(env, home.config, role=role)  # type: ignore[arg-type]
    except ValueError:
        raise BadInput("Vault settings are incomplete (see `replay-enclave vault setup`)") from None
    return TransitKeyProvider(settings=settings)


@dataclass
class Runtime:
    home: Home
    ledger: Ledger
    digests: DigestKeys
    payloads: PayloadStore
    provider: str = "local"
    env: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], datetime] = field(default=utc_now)
    _identities: dict[str, KeyProvider] = field(default_factory=dict)

    def _identity(self, role: str) -> KeyProvider:
        # Each Vault identity is built on first use: a capture-only process never
        # needs (or holds) the broker's credentials, and vice versa.
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
    def rotator(self) -> KeyProvider:
        """The rotation identity: rotate, rewrap, trim."""
        return self._identity("rotate")

    @classmethod
    def open(cls, home: Home, *, env: dict[str, str] | None = None) -> Runtime:
        from ledger import Ledger

        env = dict(os.environ) if env is None else env
        ledger = Ledger.open(home.ledger_url(env), head_path=home.head_path)
        ledger.migrate()
        return cls(
            home=home,
            ledger=ledger,
            digests=DigestKeys(keys_dir=home.keys_dir),
            payloads=PayloadStore(root=home.payloads_dir),
            provider=_provider_name(home, env),
            env=env,
        )

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
