"""The supervisor's check that a started worker is what it launched.

The worker's ``ready`` frame says what it applied; a worker is untrusted, so each
claim that reaches the environment record (and from there a certificate) is checked
from outside, in the host's ``/proc``, before any agent code runs:

1. the worker process is the only process below the launcher (for a job's worker
   forked by a zygote: below the zygote);
2. its namespaces differ from the supervisor's, one by one (bubblewrap);
3. its user namespace maps exactly one id, and inside it the worker is uid/gid 65534;
   the host uid that id maps to is recorded (bubblewrap maps it to the supervisor's
   uid) and ``unprivileged_host_uid`` is claimed only when that is not root;
4. it has no effective, permitted or bounding capabilities (bubblewrap);
5. no-new-privs is set and the seccomp filter is loaded (mode 2), as reported, exactly
   one filter more than the supervisor's own, whose bytes (and those of each run's
   filter) have the digests the supervisor computes for this machine (see
   :func:`_check_filters`), and the worker applied Landlock at the ABI this kernel
   offers (the ``ready`` frame is sent before any agent code is imported, so its word
   on Landlock and on the filters' bytes, which ``/proc`` does not show, is trusted
   code's);
6. every mount it sees is read-only except the scratch tmpfs, ``/proc`` and device
   nodes, and the kernel-settings directories of ``/proc`` are masked read-only
   (bubblewrap);
7. the kernel's soft limits for it equal the rlimits it reports;
8. its process environment (``/proc/PID/environ``, what the interpreter read at
   start-up) is exactly the one launched — the fixed hash seed included — and it
   reports starting every run as a fresh fork of itself (``run_state``), under a
   seccomp filter that allows that plain fork and nothing else of the kind (the
   ``ready`` frame is trusted code's, as in 5).

Any mismatch refuses the worker (:class:`SandboxUnavailable`): a certificate must
claim only layers that held. The environment record lists those layers by name in
``layers_in_force``; the audit hook is listed under ``diagnostics``, never as a layer.
It names the ``bwrap`` that launched the worker (path, version, sha256, source:
``_launcher``) and the sha256 of the seccomp filters loaded.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from enclave.sandbox._errors import SandboxUnavailable
from enclave.sandbox._isolation import (
    NAMESPACES,
    PROC_MASKS,
    SCRATCH,
    WORKER_GID,
    WORKER_UID,
    Isolation,
)
from enclave.sandbox._wire import SandboxLimits
from enclave.sandbox.inside import seccomp as _seccomp  # "seccomp" names a local below

_LIMIT_NAMES = {
    "Max address space": "RLIMIT_AS",
    "Max cpu time": "RLIMIT_CPU",
    "Max file size": "RLIMIT_FSIZE",
    "Max open files": "RLIMIT_NOFILE",
    "Max core file size": "RLIMIT_CORE",
}
_WRITABLE_MOUNTS = (SCRATCH, "/proc")
_BWRAP_LAYERS = (
    *(f"{name}_namespace" for name in ("user", "mount", "pid", "network", "ipc", "uts", "cgroup")),
    "minimal_filesystem",
    "tmpfs_scratch",
    "uid_65534_in_user_namespace",
    "no_capabilities",
)
_RUN_STATE = "fork-per-run"


@dataclass(frozen=True)
class Launch:
    """What the supervisor started: the facts a worker's report is checked against."""

    layer: Isolation
    limits: SandboxLimits
    seccomp: bool
    readonly_binds: int
    landlock: int  # the ABI the kernel offers: a worker must report exactly this

    def planned(self) -> dict[str, Any]:
        """The environment record before a worker was checked: no layer is claimed."""
        return {
            "isolation": self.layer.name,
            "enclave": self.layer.enclave,
            "verified": False,
            "layers_in_force": [],
            "enforced": {},
            "diagnostics": ["audit_hook"],
            "seccomp": self.seccomp,
            "rlimits": _expected_rlimits(self.limits),
            "wall_seconds": float(self.limits.wall_seconds),
            "run_state": _RUN_STATE,
            "hash_seed": None,
            "process_environment": [],
        }


def _expected_rlimits(limits: SandboxLimits) -> dict[str, int]:
    return {
        "RLIMIT_AS": limits.memory_bytes,
        "RLIMIT_CPU": limits.cpu_seconds,
        "RLIMIT_FSIZE": limits.file_size_bytes,
        "RLIMIT_NOFILE": limits.open_files,
        "RLIMIT_CORE": 0,
    }


def _refuse(what: str) -> SandboxUnavailable:
    return SandboxUnavailable(f"the worker is not isolated as launched ({what})")


def _read(pid: int, name: str) -> str:
    try:
        with open(f"/proc/{pid}/{name}", encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise _refuse(f"/proc/{name} unreadable") from exc


def children(pid: int) -> list[int]:
    """Host pids of ``pid``'s children."""
    found: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        text = _read(pid, f"task/{tid}/children")
        found += [int(c) for c in text.split()]
    return found


def _status(pid: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in _read(pid, "status").splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse("malformed report")
    return value


def _check_rlimits(pid: int, reported: Any, limits: SandboxLimits) -> dict[str, int]:
    if not isinstance(reported, dict) or set(reported) != set(_expected_rlimits(limits)):
        raise _refuse("rlimits")
    kernel: dict[str, int] = {}
    for line in _read(pid, "limits").splitlines()[1:]:
        for label, name in _LIMIT_NAMES.items():
            if line.startswith(label):
                soft = line[len(label) :].split()[0]
                kernel[name] = -1 if soft == "unlimited" else int(soft)
    applied = {name: _int(value) for name, value in reported.items()}
    if any(kernel.get(name) != value for name, value in applied.items()):
        raise _refuse("rlimits")
    return applied


def _check_bwrap(pid: int, identity: dict[str, Any], status: dict[str, str]) -> int:
    """Checks 2-4 and 6; returns the host uid the worker's uid maps to."""
    for ns in NAMESPACES:
        try:
            if os.readlink(f"/proc/{pid}/ns/{ns}") == os.readlink(f"/proc/self/ns/{ns}"):
                raise _refuse(f"{ns} namespace shared")
        except OSError as exc:
            raise _refuse(f"{ns} namespace unreadable") from exc
    host_uid = -1
    for name, inside in (("uid_map", WORKER_UID), ("gid_map", WORKER_GID)):
        rows = [line.split() for line in _read(pid, name).splitlines() if line.strip()]
        if len(rows) != 1 or rows[0][0] != str(inside) or rows[0][2] != "1":
            raise _refuse(name)
        if name == "uid_map":
            host_uid = int(rows[0][1])
    if (_int(identity.get("uid")), _int(identity.get("gid"))) != (WORKER_UID, WORKER_GID):
        raise _refuse("uid")
    for cap in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        if int(status.get(cap, "1"), 16) != 0 or (cap == "CapEff" and identity.get("cap_eff")):
            raise _refuse("capabilities")
    masked = set()
    for line in _read(pid, "mountinfo").splitlines():
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        writable = point in _WRITABLE_MOUNTS or point.startswith("/dev/")
        if "ro" not in options and not writable:
            raise _refuse("writable mount")
        if point in PROC_MASKS and "ro" in options:
            masked.add(point)
    if masked != set(PROC_MASKS):
        raise _refuse("kernel settings exposed")
    return host_uid


def _filter_count(status: dict[str, str]) -> int | None:
    value = status.get("Seccomp_filters")  # Linux 5.9 and later
    return int(value) if value is not None and value.isdigit() else None


def _check_filters(status: dict[str, str], reported: Any) -> dict[str, str]:
    """Check 5's filter digests; return them for the environment record.

    The kernel shows how many filters a process has, not their bytes (reading them
    back, ``PTRACE_SECCOMP_GET_FILTER``, takes CAP_SYS_ADMIN and a ptrace attach to
    the worker). So the worker reports the sha256 of the very buffers it handed the
    kernel (the template's filter) and will hand it in every run (the run filter, built
    once before any run and forked with the template) — in its ``ready`` frame, sent
    by trusted code before any agent code is imported — and the supervisor computes
    the digests of the same deterministic program itself. Only when the two agree, and
    the kernel shows exactly one filter on the worker beyond those the supervisor
    itself runs under, is the digest recorded: what a certificate names is then both
    what the supervisor built and what the worker loaded, and a worker whose filter
    code differs (another import path, another machine's tables) is refused rather
    than described."""
    expected = _seccomp.digests(platform.machine())
    if reported != expected:
        raise _refuse("seccomp")
    own, worker = _filter_count(_own_status()), _filter_count(status)
    if own is not None and worker != own + 1:
        raise _refuse("seccomp")
    return dict(expected)


def _own_status() -> dict[str, str]:
    return _status(os.getpid())


def _check_environ(pid: int, launched: Mapping[str, str]) -> None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise _refuse("/proc/environ unreadable") from exc
    entries = [item.partition(b"=") for item in raw.split(b"\0") if item]
    found = {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in entries}
    if found != dict(launched) or len(entries) != len(found):
        raise _refuse("process environment")


def verify(
    launch: Launch,
    *,
    launcher_pid: int,
    ready: dict[str, Any],
    environ: Mapping[str, str] = MappingProxyType({}),
    worker_pid: int | None = None,
) -> dict[str, Any]:
    """Check a worker that sent ``ready``; return the environment record it earned.
    ``environ`` is the process environment it was launched with (check 8).
    ``worker_pid``: a job's worker forked by a zygote (``launcher_pid``), which must
    be the zygote's only child (check 1)."""
    identity = ready.get("identity")
    if not isinstance(identity, dict):
        raise _refuse("malformed report")
    pid = launcher_pid
    if launch.layer.launcher is not None or worker_pid is not None:
        below = children(launcher_pid)
        if len(below) != 1 or worker_pid not in (None, below[0]):
            raise _refuse("process tree")
        pid = below[0]
    status = _status(pid)
    layers: list[str] = []
    enforced: dict[str, Any] = {}
    if launch.layer.launcher is not None:
        host_uid = _check_bwrap(pid, identity, status)
        layers += _BWRAP_LAYERS
        if host_uid != 0:
            layers.append("unprivileged_host_uid")
        enforced["bwrap"] = {
            "namespaces": list(NAMESPACES),
            "uid": WORKER_UID,
            "gid": WORKER_GID,
            "host_uid": host_uid,
            "capabilities": "none",
            "filesystem": "read-only minimal view",
            "readonly_binds": launch.readonly_binds,
            "scratch": {"kind": "tmpfs", "path": SCRATCH, "bytes": launch.limits.scratch_bytes},
            "nested_user_namespaces": "disabled",
            "new_session": True,
            "die_with_parent": True,
            "launcher": launch.layer.launcher.to_dict(),
        }
    no_new_privs = status.get("NoNewPrivs") == "1" and identity.get("no_new_privs") == 1
    seccomp = status.get("Seccomp") == "2" and identity.get("seccomp_mode") == 2
    if launch.seccomp and not (seccomp and no_new_privs and ready.get("seccomp") is True):
        raise _refuse("seccomp")
    if no_new_privs:
        layers.append("no_new_privs")
    if launch.seccomp:
        filters = _check_filters(status, ready.get("seccomp_sha256"))
        layers.append("seccomp_allowlist")
        enforced["seccomp"] = {
            "default": _seccomp.DEFAULT_ACTION,
            "allowed": len(_seccomp.ALLOWED),
            "killed": len(_seccomp.KILLED),
            "template": "plain fork only (clone flags CHILD_SETTID|CHILD_CLEARTID|SIGCHLD)",
            "runs": "a second filter per run: no process creation",
            "filters_sha256": filters,
            "filter_bytes": "the struct sock_filter array handed to the kernel",
        }
    landlock = identity.get("landlock")
    if landlock != launch.landlock or (landlock and not no_new_privs):
        raise _refuse("landlock")
    if landlock:
        layers.append("landlock")
        enforced["landlock"] = {"abi": landlock, "writes": "scratch only"}
    rlimits = _check_rlimits(pid, ready.get("rlimits"), launch.limits)
    layers += ["rlimits", "wall_clock_kill"]
    _check_environ(pid, environ)
    hash_seed = environ.get("PYTHONHASHSEED")
    if ready.get("run_state") != _RUN_STATE or ready.get("hash_seed") != _int_or_none(hash_seed):
        raise _refuse("run state")
    layers.append("fresh_process_per_run")
    enforced["fresh_process_per_run"] = {
        "template": "trusted modules only, never agent code",
        "scratch": "emptied after every run",
    }
    enforced["rlimits"] = rlimits
    enforced["wall_clock_kill"] = {"seconds": float(launch.limits.wall_seconds)}
    return {
        **launch.planned(),
        "verified": True,
        "layers_in_force": layers,
        "enforced": enforced,
        "rlimits": rlimits,
        "hash_seed": _int_or_none(hash_seed),
        "process_environment": sorted(environ),
    }


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
