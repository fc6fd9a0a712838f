"""The enclave home: one folder holding the embedded ledger, keys, payloads, certificates.

``replay-enclave init`` creates it with a marker file; every other command refuses a
folder without the marker ("not a home") instead of scattering files into it.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import BadInput

__all__ = ["Home", "default_home"]

MARKER = ".replay-enclave-home"
ENV_HOME = "REPLAY_ENCLAVE_HOME"
ENV_LEDGER_URL = "REPLAY_ENCLAVE_LEDGER_URL"


def default_home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env.get(ENV_HOME) or "./.replay-enclave")


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def keys_dir(self) -> Path:
        return self.root / "keys"

    @property
    def payloads_dir(self) -> Path:
        return self.root / "payloads"

    @property
    def certificates_dir(self) -> Path:
        return self.root / "certificates"

    @property
    def head_path(self) -> Path:
        return self.root / "ledger.head"

    @property
    def signing_key_path(self) -> Path:
        return self.keys_dir / "signing-key.pem"

    @property
    def config(self) -> dict[str, Any]:
        path = self.root / "config.toml"
        try:
            return tomllib.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, tomllib.TOMLDecodeError):
            raise BadInput("the home's config.toml is not valid TOML") from None

    def ledger_url(self, env: dict[str, str] | None = None) -> str:
        env = dict(os.environ) if env is None else env
        if env.get(ENV_LEDGER_URL):
            return env[ENV_LEDGER_URL]
        configured = self.config.get("ledger", {}).get("url")
        if isinstance(configured, str) and configured:
            return configured
        return f"sqlite:///{(self.root / 'ledger.db').resolve()}"

    @classmethod
    def init(cls, root: Path) -> Home:
        if root.exists() and not root.is_dir():
            raise BadInput("the home path exists and is not a folder")
        if root.is_dir() and any(root.iterdir()) and not (root / MARKER).exists():
            raise BadInput("the folder is not empty and is not a replay-enclave home")
        for sub in ("", "keys", "payloads", "certificates"):
            (root / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        (root / MARKER).write_text("replay-enclave home v1\n")
        config = root / "config.toml"
        if not config.exists():
            config.write_text('[keys]\nprovider = "local"\n')
        return cls(root)

    @classmethod
    def open(cls, root: Path) -> Home:
        if not (root / MARKER).is_file():
            raise BadInput("not a replay-enclave home (run `replay-enclave init` first)")
        return cls(root)
