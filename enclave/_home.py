"""The enclave home: one folder holding the embedded ledger, keys, payloads, certificates.

``replay-enclave init`` creates it with a marker file; every other command refuses a
folder without the marker ("not a home") instead of scattering files into it.

The first runtime opened on a home binds it to its backends: ``config.toml`` gains a
``[backend]`` table naming where the ledger is (URL without credentials), the key
provider and, with transit keys, the Vault address. Later, a ledger URL or key provider
from the environment must agree with it, and without one the bound backend is used — or,
when the ledger URL carried a password, the run is refused with one line asking for it.
A PostgreSQL home opened without its URL never falls back to an empty embedded ledger.

Where payload ciphertext is kept is bound the same way: ``[payloads] store = "files"``
(the home's ``payloads/`` folder, the default) or ``"database"`` (the ledger's database,
for workers on other hosts), or ``REPLAY_ENCLAVE_PAYLOAD_STORE``; ``[backend]`` records
``payloads`` on first open (a home bound before it existed has none: "files"). Asking
for the other store later is refused with one line naming ``payloads migrate``, the
only way to move them (``rebind_payloads`` is its last step).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from ._errors import BadInput

__all__ = ["Home", "default_home", "ledger_location"]

MARKER = ".replay-enclave-home"
ENV_HOME = "REPLAY_ENCLAVE_HOME"
ENV_LEDGER_URL = "REPLAY_ENCLAVE_LEDGER_URL"
ENV_KEY_PROVIDER = "REPLAY_ENCLAVE_KEY_PROVIDER"
ENV_PAYLOAD_STORE = "REPLAY_ENCLAVE_PAYLOAD_STORE"
PAYLOAD_STORES = ("files", "database")
BACKEND = "backend"
EMBEDDED = "embedded"


def ledger_location(url: str) -> str:
    """Where a ledger URL points, without user or password: what a home is bound to."""
    try:
        parts = urlsplit(url)
        port: int | str | None = parts.port
    except ValueError:
        raise BadInput("the ledger URL is malformed") from None
    scheme = parts.scheme.split("+", 1)[0]
    if scheme == "sqlite":
        path = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
        return f"sqlite:{Path(path).resolve()}" if path else "sqlite:memory"
    host: str | None = parts.hostname
    if not host and scheme == "postgresql":
        # on this host through a Unix socket: libpq's host= names its directory
        query = parse_qs(parts.query)
        socket_dir = query.get("host", [""])[-1]
        if socket_dir.startswith("/"):
            host, port = socket_dir, port or query.get("port", [""])[-1]
    if not scheme or not host:
        raise BadInput("the ledger URL is malformed")
    return f"{scheme}://{host}:{port or ''}{parts.path}"


def default_home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env.get(ENV_HOME) or "./.replay-enclave")


@dataclass(frozen=True)
class Home:
    MARKER: ClassVar[str] = MARKER  # the file that says a folder is a home

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
    def reports_dir(self) -> Path:
        return self.root / "reports"

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

    @property
    def ledger_path(self) -> Path:
        return self.root / "ledger.db"

    @property
    def backend(self) -> dict[str, str]:
        """The backends this home is bound to (empty before its first runtime)."""
        table = self.config.get(BACKEND, {})
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise BadInput("the home's config.toml has a malformed [backend] table")
        return dict(table)

    def _embedded_url(self) -> str:
        return f"sqlite:///{self.ledger_path.resolve()}"

    def _location(self, url: str) -> str:
        # the home's own file is "embedded" wherever the home is (a copied home is whole)
        return EMBEDDED if url == self._embedded_url() else ledger_location(url)

    def ledger_url(self, env: dict[str, str] | None = None) -> str:
        """The ledger's URL: the environment's, else ``[ledger] url``, else the bound
        one, else the embedded file. Refused (``BadInput``, one line) when it disagrees
        with the bound backend, or when the bound one needs a URL that is not given."""
        env = dict(os.environ) if env is None else env
        configured = self.config.get("ledger", {}).get("url")
        url = env.get(ENV_LEDGER_URL) or (configured if isinstance(configured, str) else None)
        bound = self.backend.get("ledger")
        if url:
            if bound is not None and self._location(url) != bound:
                raise BadInput(f"this home's ledger is {bound}; {ENV_LEDGER_URL} points elsewhere")
            return url
        embedded = self._embedded_url()
        if bound is not None and bound != EMBEDDED:
            if self.backend.get("ledger_url"):
                return self.backend["ledger_url"]
            raise BadInput(f"this home's ledger is {bound}: set {ENV_LEDGER_URL} to its URL")
        return embedded

    def key_provider(self, env: dict[str, str] | None = None) -> str:
        """``local`` or ``transit``: the environment's, else the bound one, else
        ``[keys] provider``. A disagreement with the bound provider is refused."""
        env = dict(os.environ) if env is None else env
        bound = self.backend.get("keys")
        configured = self.config.get("keys", {}).get("provider", "local")
        name = env.get(ENV_KEY_PROVIDER) or bound or configured
        if name not in ("local", "transit"):
            raise BadInput("unknown key provider in config (use 'local' or 'transit')")
        if bound is not None and name != bound:
            raise BadInput(f"this home's keys are {bound}; {ENV_KEY_PROVIDER} says otherwise")
        return str(name)

    def bound_payloads(self) -> str:
        """Where this home's payloads are: ``files`` unless bound to ``database``
        (a home bound before payload stores were chosen has no key: files)."""
        bound = self.backend.get("payloads", "files")
        if bound not in PAYLOAD_STORES:
            raise BadInput("the home's config.toml names an unknown payload store")
        return bound

    def payload_store(self, env: dict[str, str] | None = None) -> str:
        """``files`` or ``database``: the environment's, else ``[payloads] store``, else
        the bound one. Asking for other than the bound store is refused."""
        env = dict(os.environ) if env is None else env
        table = self.config.get("payloads", {})
        configured = table.get("store") if isinstance(table, dict) else None
        name = env.get(ENV_PAYLOAD_STORE) or configured
        if name is not None and name not in PAYLOAD_STORES:
            raise BadInput("unknown payload store in config (use 'files' or 'database')")
        if not self.backend:
            return str(name or "files")
        bound = self.bound_payloads()
        if name is not None and name != bound:
            raise BadInput(
                f"this home's payloads are in {bound}, not {name}: "
                f"move them with `replay-enclave payloads migrate --to {name}`"
            )
        return bound

    def bind_backend(
        self, *, ledger_url: str, keys: str, vault_addr: str | None, payloads: str = "files"
    ) -> None:
        """Record the backends of the first runtime opened here (once; only
        ``rebind_payloads`` changes them later)."""
        if self.backend:
            return
        location = self._location(ledger_url)
        lines = ["", f"[{BACKEND}]", f"ledger = {json.dumps(location)}"]
        if urlsplit(ledger_url).password is None and location != EMBEDDED:
            lines.append(f"ledger_url = {json.dumps(ledger_url)}")  # no secret in it
        lines.append(f"keys = {json.dumps(keys)}")
        if vault_addr:
            lines.append(f"vault_addr = {json.dumps(vault_addr)}")
        lines.append(f"payloads = {json.dumps(payloads)}")
        path = self.root / "config.toml"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    def rebind_payloads(self, store: str) -> None:
        """Bind the (already bound) home's payloads to ``store``: its ``[backend]``
        ``payloads`` and any ``[payloads] store`` line say so, in one atomic rewrite of
        config.toml (nothing else in it changes)."""
        if store not in PAYLOAD_STORES:
            raise ValueError(f"unknown payload store {store!r}")
        if not self.backend:
            raise ValueError("the home is not bound yet")
        path = self.root / "config.toml"
        lines = path.read_text(encoding="utf-8").splitlines()
        value = json.dumps(store)
        table, out, recorded = "", [], False
        for line in lines:
            bare = line.strip()
            if bare.startswith("[") and not bare.startswith("[["):
                if table == BACKEND and not recorded:
                    out.append(f"payloads = {value}")
                    recorded = True
                table = bare.strip("[]").strip()
            key = bare.split("=", 1)[0].strip() if "=" in bare else ""
            if table == BACKEND and key == "payloads":
                line, recorded = f"payloads = {value}", True
            elif table == "payloads" and key == "store":
                line = f"store = {value}"
            out.append(line)
        if table == BACKEND and not recorded:
            out.append(f"payloads = {value}")
        tmp = path.with_name(".config.toml.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(out) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        if self.bound_payloads() != store:  # the file is not what this reader expects
            raise BadInput("the home's config.toml could not be rebound")

    def private_ledger_file(self, url: str) -> None:
        """The embedded ledger's file exists with mode 0600 before SQLite opens it (its
        journal files take the same mode)."""
        if url != self._embedded_url():
            return
        # Never open (and so close) an existing ledger file here: closing any descriptor
        # of a file drops every POSIX lock this process holds on it, SQLite's included.
        try:
            os.close(os.open(self.ledger_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            if self.ledger_path.stat().st_mode & 0o077:
                os.chmod(self.ledger_path, 0o600)

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
        if not config.exists():  # 0600: a [vault] table may hold secret ids
            fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write('[keys]\nprovider = "local"\n')
        return cls(root)

    @classmethod
    def open(cls, root: Path) -> Home:
        if not (root / MARKER).is_file():
            raise BadInput("not a replay-enclave home (run `replay-enclave init` first)")
        return cls(root)
