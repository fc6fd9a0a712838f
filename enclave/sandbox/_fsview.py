"""The worker's file system: what bubblewrap binds, read-only, into an empty root.

Invariants:

1. **Code and what loads it, nothing else.** The view holds the interpreter (its
   executable, standard library and ``libpython``), the system's shared libraries
   (the multiarch directory ``/usr/lib/<triplet>`` where the platform has one, else
   ``/usr/lib``; ``/usr/lib64``; the ``/lib*`` links to them), the time-zone data
   and the import path's packages; of ``/etc`` only ``os-release`` (the platform's
   name, which ``platform`` reports like ``uname``'s) and the system's bundle of
   certificate authorities (public; an HTTP client built in a run loads it where its
   environment names it, ``SSL_CERT_FILE``, even with no network to use it on). No
   home directory, no ``/tmp``, no
   host ``/proc`` (bubblewrap adds a private one), no ``/sys``.
2. **Never a directory that holds a protected path.** The sandbox's enclave home is
   protected, and so is any directory carrying the home marker file. A directory
   that contains a protected path is never bound whole: its entries are bound one
   by one and the protected ones are left out.
3. **Import-path directories outside the interpreter's prefix are not trusted
   whole.** A checkout on ``sys.path`` (an editable install) or a project folder may
   hold an enclave home, keys or data next to its code: only its importable entries
   are bound — packages (identifier names), modules, distribution metadata — never
   dot-entries and never an entry that is a home.
4. **Masked, not hoped.** A protected path that still lies below a bound entry is
   covered with an empty read-only tmpfs (a directory) or ``/dev/null`` (a file), so
   it is invisible inside whatever else is bound.
5. **Candidate code, exactly.** A candidate release's module file or package directory
   (or the supervisor's copy of it) is bound at its own path, never the directory it
   sits in: what else lies in its source root stays out of the view. It is bound over
   whatever else the view shows there.

Building the view is a few ``listdir`` calls per import-path entry, once per
:class:`~enclave.sandbox.Sandbox`.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The file ``replay-enclave init`` writes into every enclave home.
HOME_MARKER = ".replay-enclave-home"
_LIBRARY_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32")
_DATA_DIRS = ("/usr/share/zoneinfo",)  # time zones, for ``zoneinfo``
# the host's platform facts, as ``uname`` gives them (the template probes them once,
# ``platform.freedesktop_os_release``, so that no run reads them), and the public
# certificate authorities a TLS client context loads
_PLATFORM_FILES = ("/etc/os-release", "/etc/ssl/certs/ca-certificates.crt")
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_MODULE_SUFFIXES = (".py", ".pyc", ".so")


@dataclass(frozen=True)
class View:
    """Read-only binds ``(source, destination)``, symlinks ``(target, path)`` and masks."""

    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...]
    masks: tuple[tuple[str, bool], ...]  # (path, is a directory)

    def bwrap_args(self) -> list[str]:
        argv: list[str] = []
        for source, dest in self.binds:
            argv += ["--ro-bind", source, dest]
        for target, path in self.symlinks:
            argv += ["--symlink", target, path]
        for path, is_dir in self.masks:
            if is_dir:
                argv += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
            else:
                argv += ["--ro-bind", "/dev/null", path]
        return argv


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class _Planner:
    def __init__(self, protected: Iterable[str]) -> None:
        self.protected = sorted({os.path.realpath(p) for p in protected if p})
        self.binds: dict[str, str] = {}  # destination -> source

    def is_protected(self, real: str) -> bool:
        return any(_within(real, p) for p in self.protected) or os.path.exists(
            os.path.join(real, HOME_MARKER)
        )

    def holds_protected(self, real: str) -> bool:
        return any(_within(p, real) for p in self.protected)

    def covered(self, dest: str) -> bool:
        return any(_within(dest, bound) for bound in self.binds)

    def bind(self, source: str, dest: str) -> None:
        if not self.covered(dest):
            self.overlay(source, dest)

    def overlay(self, source: str, dest: str) -> None:
        """Bind ``source`` at ``dest`` even below a wider bind (mounted after it)."""
        for bound in [b for b in self.binds if _within(b, dest)]:
            del self.binds[bound]  # a wider bind replaces the narrower ones below it
        self.binds[dest] = source

    def trusted_dir(self, path: str) -> None:
        """Bind an installation directory whole unless it holds a protected path."""
        real = os.path.realpath(path)
        if not os.path.isdir(real) or self.is_protected(real):
            return
        if self.holds_protected(real):
            self.entries(path, importable_only=False)
        else:
            self.bind(real, os.path.abspath(path))

    def entries(self, path: str, *, importable_only: bool) -> None:
        """Bind the entries of ``path`` one by one (invariants 2 and 3): all of them
        inside an installation or a package, only importable ones at the top of an
        import-path directory; protected ones and homes never."""
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            if name.startswith(".") or name == "__pycache__":
                continue
            child = os.path.join(os.path.abspath(path), name)
            real = os.path.realpath(child)
            if self.is_protected(real):
                continue
            if os.path.isdir(real):
                metadata = name.endswith(_METADATA_SUFFIXES)
                if importable_only and not (name.isidentifier() or metadata):
                    continue
                if self.holds_protected(real):
                    self.entries(child, importable_only=False)
                else:
                    self.bind(real, child)
            elif os.path.isfile(real):
                module = name.endswith(_MODULE_SUFFIXES) and name.split(".")[0].isidentifier()
                if module or not importable_only:
                    self.bind(real, child)

    def masks(self) -> tuple[tuple[str, bool], ...]:
        return tuple(
            (p, os.path.isdir(p)) for p in self.protected if os.path.exists(p) and self.covered(p)
        )


def _interpreter_paths() -> tuple[list[tuple[str, str]], list[str]]:
    """(executable binds, trusted directories) of the running interpreter."""
    exe = os.path.abspath(sys.executable)
    files = [(os.path.realpath(exe), exe)]
    libdir = sysconfig.get_config_var("LIBDIR")
    library = sysconfig.get_config_var("LDLIBRARY")
    if isinstance(libdir, str) and isinstance(library, str) and library.endswith(".so"):
        for name in os.listdir(libdir) if os.path.isdir(libdir) else ():
            if name.startswith(library):
                path = os.path.join(libdir, name)
                files.append((os.path.realpath(path), path))
    if sys.prefix != sys.base_prefix:  # a virtual environment: its marker file
        cfg = os.path.join(sys.prefix, "pyvenv.cfg")
        if os.path.isfile(cfg):
            files.append((os.path.realpath(cfg), cfg))
    paths = sysconfig.get_paths()
    trusted = [paths["stdlib"], paths["platstdlib"]]
    return files, trusted


def _prefixes() -> tuple[str, ...]:
    return tuple({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})


def plan(
    *,
    python_path: Sequence[str],
    protected: Sequence[str],
    code: Sequence[tuple[str, str]] = (),
) -> View:
    """The minimal read-only view for a worker importing from ``python_path``, plus
    ``code``: (source, shown at) pairs of single module files or package directories
    (a candidate release's), each bound at its path and nothing beside it (invariant 5)."""
    planner = _Planner(protected)
    files, trusted = _interpreter_paths()
    for directory in trusted:
        planner.trusted_dir(directory)
    symlinks: list[tuple[str, str]] = []
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for directory in _LIBRARY_DIRS:
        if os.path.islink(directory):
            symlinks.append((os.readlink(directory), directory))
        elif isinstance(multiarch, str) and os.path.isdir(os.path.join(directory, multiarch)):
            planner.trusted_dir(os.path.join(directory, multiarch))  # Debian: libraries only
        elif os.path.isdir(directory):
            planner.trusted_dir(directory)
    for directory in _DATA_DIRS:
        planner.trusted_dir(directory)
    for fact in _PLATFORM_FILES:
        real = os.path.realpath(fact)
        if os.path.isfile(real) and not planner.is_protected(real):
            planner.bind(real, fact)
    prefixes = _prefixes()
    # A console script puts its own directory first on the import path: it holds
    # commands, not packages, and in a virtual environment a link to the interpreter
    # whose target lies outside it. Only its importable entries are bound.
    scripts = {os.path.realpath(sysconfig.get_paths()["scripts"])}
    for entry in python_path:
        if not entry:
            continue
        real = os.path.realpath(entry)
        if os.path.isfile(real) and not planner.is_protected(real):
            planner.bind(real, os.path.abspath(entry))  # a zip archive on the path
        elif real in scripts:
            planner.entries(entry, importable_only=True)
        elif any(_within(real, prefix) for prefix in prefixes):
            planner.trusted_dir(entry)
        elif os.path.isdir(real) and not planner.is_protected(real):
            planner.entries(entry, importable_only=True)
    for source, dest in files:
        if not planner.is_protected(source):
            planner.bind(source, dest)
    # last: bound over whatever else the view shows there
    for source, shown in code:
        real, dest = os.path.realpath(source), os.path.abspath(shown)
        if planner.is_protected(os.path.realpath(shown)):
            continue
        if os.path.isfile(real):
            planner.overlay(real, dest)
        elif os.path.isdir(real):
            if planner.holds_protected(real):
                planner.entries(source, importable_only=False)
            else:
                planner.overlay(real, dest)
    binds = tuple((source, dest) for dest, source in sorted(planner.binds.items()))
    return View(binds=binds, symlinks=tuple(symlinks), masks=planner.masks())
