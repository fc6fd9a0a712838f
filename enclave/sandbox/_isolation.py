"""OS isolation layers that back the in-process tripwire, and how to detect them.

Strongest first:

* ``bwrap`` — bubblewrap with every namespace unshared (network, pid, ipc, uts,
  cgroup, user where possible), the host file system mounted read-only, fresh
  ``/tmp``, ``/run`` and ``/dev``, all capabilities dropped, and only the worker's
  scratch directory writable. Host TCP and host Unix sockets are out of reach.
* ``unshare`` — util-linux ``unshare`` with a new network (and ipc) namespace:
  TCP and native ``connect`` fail with ENETUNREACH; the file system is the host's,
  so writes are stopped by the tripwire only.
* ``none`` — no OS layer (requested loudly as ``UNSAFE_none``, or reported when
  ``auto`` finds nothing usable).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from enclave.sandbox._errors import SandboxUnavailable

ISOLATION_CHOICES = ("auto", "bwrap", "unshare", "UNSAFE_none")
# Host directories replaced by empty file systems inside bubblewrap.
_FRESH_DIRS = ("/tmp", "/run")  # noqa: S108 - mount points inside the sandbox, not files
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Isolation:
    """One resolved isolation layer: its name, what it provides, its argv prefix."""

    name: str  # "bwrap" | "unshare" | "none"
    network_namespace: bool
    pid_namespace: bool
    filesystem_readonly: bool

    def wrap(self, argv: Sequence[str], *, scratch: str, readable: Sequence[str]) -> list[str]:
        """Return ``argv`` wrapped in this layer's launcher."""
        if self.name == "bwrap":
            return _bwrap_prefix(scratch=scratch, readable=readable) + ["--", *argv]
        if self.name == "unshare":
            return _unshare_prefix() + ["--", *argv]
        return list(argv)


def _under_fresh_dir(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in _FRESH_DIRS)


def _bwrap_prefix(*, scratch: str, readable: Sequence[str]) -> list[str]:
    argv = [
        _tool("bwrap"),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--tmpfs",
        "/tmp",  # noqa: S108 - a fresh, private tmpfs inside the sandbox
        "--tmpfs",
        "/run",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    # Code the worker must import may live under a directory that the fresh
    # file systems hide (a checkout in /tmp, say): bring those back read-only.
    seen: set[str] = set()
    for path in readable:
        real = os.path.realpath(path)
        if real in seen or not _under_fresh_dir(real) or not os.path.exists(real):
            continue
        seen.add(real)
        argv += ["--ro-bind", real, real]
    argv += ["--bind", scratch, scratch, "--chdir", scratch]
    return argv


def _unshare_prefix() -> list[str]:
    argv = [_tool("unshare")]
    if os.geteuid() != 0:
        argv.append("--map-root-user")
    return argv + ["--net", "--ipc"]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SandboxUnavailable(f"isolation tool not found: {name}")
    return path


BWRAP = Isolation("bwrap", network_namespace=True, pid_namespace=True, filesystem_readonly=True)
UNSHARE = Isolation(
    "unshare", network_namespace=True, pid_namespace=False, filesystem_readonly=False
)
NONE = Isolation("none", network_namespace=False, pid_namespace=False, filesystem_readonly=False)


def _probe(layer: Isolation) -> bool:
    """Run a trivial program under ``layer``; True if it starts and exits 0."""
    if sys.platform != "linux":
        return False
    try:
        with tempfile.TemporaryDirectory(prefix="isolation-probe-") as probe_dir:
            real = os.path.realpath(probe_dir)
            argv = layer.wrap(
                [sys.executable, "-I", "-S", "-c", "pass"], scratch=real, readable=[sys.prefix]
            )
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_PROBE_TIMEOUT,
                check=False,
            )
    except (OSError, subprocess.SubprocessError, SandboxUnavailable):
        return False
    return done.returncode == 0


@functools.cache
def available(name: str) -> bool:
    """Whether layer ``name`` works on this machine (probed once per process)."""
    layer = {"bwrap": BWRAP, "unshare": UNSHARE}[name]
    return shutil.which(name) is not None and _probe(layer)


def resolve(choice: str) -> Isolation:
    """Map a requested isolation to a working layer, or raise SandboxUnavailable."""
    if choice not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_CHOICES)}")
    if choice == "UNSAFE_none":
        return NONE
    if choice in ("bwrap", "unshare"):
        if not available(choice):
            raise SandboxUnavailable(f"isolation layer unavailable: {choice}")
        return BWRAP if choice == "bwrap" else UNSHARE
    for name, layer in (("bwrap", BWRAP), ("unshare", UNSHARE)):
        if available(name):
            return layer
    return NONE
