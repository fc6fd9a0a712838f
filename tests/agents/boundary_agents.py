"""Worker handlers and agents that attack the OS wall around replayed code.

Each handler runs inside a real sandbox worker (``tests.agents.boundary_agents:NAME``) and
tries one way past the wall *without* relying on the in-process tripwire: errors
are swallowed and reported as plain outcomes, so the test can check that the OS
layers alone stopped the attempt. Nothing here is imported by the enclave.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from collections.abc import Mapping
from typing import Any

from enclave.capture import AgentSpec
from tests.agents.replay_agents import INPUTS, LOOKUP, OUTCOME, _plain

MARKER = ".replay-enclave-home"


def _try_read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.read(64)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return type(exc).__name__
    return "read"


def pathlib_in_scratch(request: dict[str, Any]) -> dict[str, Any]:
    """Well-behaved: write through pathlib inside scratch (the tripwire reads such
    paths through their slots, without calling their methods)."""
    import pathlib

    target = pathlib.Path("notes") / "a.txt"
    target.parent.mkdir()
    target.write_text("kept", encoding="utf-8")
    absolute = pathlib.Path.cwd() / "b.txt"
    absolute.write_text("kept", encoding="utf-8")
    return {"text": target.read_text(encoding="utf-8") + absolute.read_text(encoding="utf-8")}


def pathlib_outside(request: dict[str, Any]) -> dict[str, Any]:
    """A pathlib write outside scratch."""
    import pathlib

    pathlib.Path(request["path"]).write_text("escaped", encoding="utf-8")
    return {"wrote": True}


def disarm_only(request: dict[str, Any]) -> dict[str, Any]:
    """Try to reach the hook's state through an object the hook would call."""
    return {"disarmed": _disarm_tripwire()}


def fill_scratch(request: dict[str, Any]) -> dict[str, Any]:
    """Write many files, each below the file-size limit, until the disk says no."""
    written = 0
    for i in range(int(request["files"])):
        try:
            with open(f"fill-{i}.bin", "wb") as fh:
                fh.write(b"\0" * int(request["size"]))
        except OSError as exc:
            return {"written": written, "error": type(exc).__name__}
        written += int(request["size"])
    return {"written": written, "error": None}


def read_paths(request: dict[str, Any]) -> dict[str, Any]:
    """Try to read every named file; report which ones opened."""
    return {"results": {path: _try_read(path) for path in request["paths"]}}


def tls_context(request: dict[str, Any]) -> dict[str, Any]:
    """Build a TLS client context from the named CA bundle, as an HTTP client built in a
    run does (``SSL_CERT_FILE``); report how many authorities it loaded."""
    import ssl

    try:
        context = ssl.create_default_context(cafile=request["cafile"])
    except OSError as exc:
        return {"error": type(exc).__name__}
    return {"authorities": context.cert_store_stats()["x509_ca"]}


def find_homes(request: dict[str, Any]) -> dict[str, Any]:
    """Walk the whole visible file system for enclave homes and named directories."""
    wanted = set(request.get("names", ()))
    found: list[str] = []
    for top, dirs, files in os.walk("/", onerror=None):
        if top in ("/proc", "/sys", "/dev"):
            dirs[:] = []
            continue
        for name in (*dirs, *files):
            if name == MARKER or name in wanted:
                found.append(os.path.join(top, name))
    return {"found": found}


def identity(request: dict[str, Any]) -> dict[str, Any]:
    """What the worker is, as the kernel sees it from inside."""
    status: dict[str, str] = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    return {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "cap_eff": status.get("CapEff"),
        "no_new_privs": status.get("NoNewPrivs"),
        "seccomp": status.get("Seccomp"),
        "env": sorted(os.environ),
    }


def writable_proc(request: dict[str, Any]) -> dict[str, Any]:
    """Kernel files under /proc that open for writing (nothing is written)."""
    found: list[str] = []
    for top, dirs, files in os.walk("/proc"):
        parts = top.split("/")
        if len(parts) > 2 and (parts[2].isdigit() or parts[2] in ("self", "thread-self")):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(top, name)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue
            found.append(path)
    return {"writable": found}


def snoop_proc(request: dict[str, Any]) -> dict[str, Any]:
    """Read every process environment and memory the worker can reach."""
    seen: list[str] = []
    pids = {os.getppid(), int(request["host_pid"]), 1}
    try:
        pids |= {int(p) for p in os.listdir("/proc") if p.isdigit()}
    except OSError:
        pass
    for pid in sorted(pids):
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    seen.append(fh.read().decode("latin-1"))
            except OSError:
                pass
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/mem", "rb") as fh:
                fh.seek(0x400000)
                seen.append(fh.read(4096).decode("latin-1"))
        except (OSError, ValueError, OverflowError):
            pass
    seen.append(repr(dict(os.environ)))
    return {"seen": "\n".join(seen)}


def stop_supervisor(request: dict[str, Any]) -> dict[str, Any]:
    """Stop the supervisor (and the parent) with pidfd_send_signal, then hang."""
    for pid in (int(request["host_pid"]), os.getppid()):
        try:
            fd = os.pidfd_open(pid)
            signal.pidfd_send_signal(fd, signal.SIGSTOP)
        except OSError:
            pass
    time.sleep(3600)
    return {"stopped": True}


def write_with_dir_fd(request: dict[str, Any]) -> dict[str, Any]:
    """Create files relative to directory descriptors (no path the hook can check)."""
    done: dict[str, str] = {}
    for directory in request["dirs"]:
        try:
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fd = os.open("escaped.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dir_fd)
                os.write(fd, b"escaped")
                os.close(fd)
            finally:
                os.close(dir_fd)
            done[directory] = "wrote"
        except OSError as exc:
            done[directory] = type(exc).__name__
    return {"results": done}


def sqlite_escape(request: dict[str, Any]) -> dict[str, Any]:
    """Write database files outside scratch with ATTACH and VACUUM INTO."""
    done: dict[str, str] = {}
    for target in request["targets"]:
        for how in ("attach", "vacuum"):
            path = f"{target}.{how}.db"
            try:
                conn = sqlite3.connect(":memory:")
                conn.execute("create table t (x)")
                conn.execute("insert into t values ('escaped')")
                if how == "attach":
                    conn.execute("attach database ? as other", (path,))
                    conn.execute("create table other.t (x)")
                    conn.commit()
                else:
                    conn.execute("vacuum into ?", (path,))
                conn.close()
                done[path] = "wrote"
            except sqlite3.Error as exc:
                done[path] = type(exc).__name__
    return {"results": done}


class _NoLock:
    def acquire(self, timeout: float = -1) -> bool:
        return True


def _disarm_tripwire() -> bool:
    """Reach the audit hook's state through a frame and switch it off.

    An object whose ``__fspath__`` runs inside the hook can walk up to the hook's
    frames and rewrite the cells its verdicts depend on.
    """
    disarmed = []

    class Key:
        def __fspath__(self) -> str:
            frame = sys._getframe(1)
            while frame is not None:
                names = frame.f_code.co_freevars + frame.f_code.co_cellvars
                if "trip" in frame.f_locals and "table" in frame.f_locals:
                    table = frame.f_locals["table"]
                    if isinstance(table, dict):
                        table.clear()
                    trip = frame.f_locals["trip"]
                    for cell_name, cell in zip(
                        trip.__code__.co_freevars, trip.__closure__ or (), strict=False
                    ):
                        if cell_name == "exit_now":
                            cell.cell_contents = lambda code: None
                        if cell_name == "write":
                            cell.cell_contents = lambda fd, data: len(data)
                        if cell_name == "send_lock":
                            cell.cell_contents = _NoLock()
                    disarmed.append(bool(names))
                    break
                frame = frame.f_back  # type: ignore[assignment]
            return os.path.join(os.getcwd(), "harmless")

    try:
        sys.audit("open", Key(), "w", 0)
    except Exception:  # noqa: BLE001 - a hardened hook may refuse the object
        return False
    return bool(disarmed)


def disarm_then_escape(request: dict[str, Any]) -> dict[str, Any]:
    """Disarm the tripwire, then connect with ctypes and write outside scratch."""
    import ctypes
    import socket
    import struct

    disarmed = _disarm_tripwire()
    wrote = "no"
    try:
        with open(request["path"], "w", encoding="utf-8") as fh:
            fh.write("escaped")
        wrote = "yes"
    except OSError:
        pass
    connected = -1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
        addr = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(int(request["port"])),
                           bytes([127, 0, 0, 1]))  # fmt: skip
        connected = libc.connect(fd, addr, len(addr))
    except OSError:
        pass
    return {"disarmed": disarmed, "wrote": wrote, "connected": connected}


def _disarm_and_write(inputs: Mapping[str, Any]) -> None:
    _disarm_tripwire()
    try:
        with open(str(inputs["path"]), "w", encoding="utf-8") as fh:
            fh.write("escaped")
    except OSError:
        pass


# Captured harmlessly; when replayed it disarms the tripwire and tries a write.
DISARM_AGENT = AgentSpec(
    name="tests.agents.boundary_agents:DISARM_AGENT",
    version="1.0.0",
    function=lambda ctx, inputs: _plain(ctx, inputs, _disarm_and_write),
    inputs=INPUTS,
    outcome=OUTCOME,
    boundaries=(LOOKUP,),
)
