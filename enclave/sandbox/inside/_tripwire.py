"""PEP 578 audit-hook tripwire, armed inside the worker before agent code runs.

The tripwire is a *diagnostic*: it names the reason for a stopped replay fast and
precisely (``socket.connect``, ``open``...). It is not a security layer and the
environment record never lists it as one — code in the same interpreter can reach
and rewrite any Python state — so the seccomp filter and bubblewrap are the wall.

Invariants:

1. A forbidden event never returns to the caller: the hook writes one
   ``contaminated`` frame to the supervisor and ends the process with
   ``os._exit``. ``try/except``, ``finally`` and other threads cannot save the run.
2. The frame carries a reason code and the audit event *name* only — never
   arguments (addresses, paths, commands come from agent data).
3. The hook keeps its state in closure cells bound at arming time, in immutable
   containers, and calls only functions captured then, so rebinding module
   attributes (``os.path.realpath``, this module's globals) does not change its
   verdicts.
4. The hook never runs agent code: it looks only at arguments of the exact types
   ``str``, ``bytes``, ``int`` (and ``pathlib`` paths, read through their slots);
   a write through any other path object trips. Running agent code inside the hook
   would hand it the hook's frames and, through them, its state.

Audit hooks are a tripwire, not a wall (ctypes, a native extension or
``_posixsubprocess`` can act without an event): the seccomp filter and the OS
isolation layer back it.
"""

from __future__ import annotations

import os
import posix
import sys
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import orjson

from enclave.sandbox import _wire
from enclave.sandbox._wire import (
    EXIT_CODES,
    FORBIDDEN_OPERATION,
    NATIVE_CODE,
    NETWORK,
    PROCESS_SPAWN,
    WRITE_OUTSIDE_SCRATCH,
)

_NETWORK_EVENTS = (
    "socket.connect",
    "socket.bind",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
    "socket.sendto",
    "socket.sendmsg",
    "socket.sethostname",
    "http.client.connect",
    "urllib.Request",
    "ftplib.connect",
    "smtplib.connect",
    "poplib.connect",
    "imaplib.open",
    "nntplib.connect",
    "telnetlib.Telnet.open",
    "webbrowser.open",
)
_PROCESS_EVENTS = (
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
    "os.startfile",
    "_posixsubprocess.fork_exec",
)
_NATIVE_EVENTS = (
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.dlsym/handle",
    "ctypes.call_function",
    "ctypes.cdata",
    "ctypes.cdata/buffer",
    "ctypes.string_at",
    "ctypes.wstring_at",
    "ctypes.PyObj_FromPtr",
)
_FORBIDDEN_EVENTS = (
    "resource.setrlimit",
    "resource.prlimit",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
)
# Events whose arguments name paths that the call may modify: event -> pairs of
# (index of a path argument, index of its dir_fd argument or -1).
_PATH_EVENTS: dict[str, tuple[tuple[int, int], ...]] = {
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    "os.link": ((1, 3),),
    "os.symlink": ((1, 2),),
    "os.truncate": ((0, -1),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.chflags": ((0, -1),),
    "os.lchflags": ((0, -1),),
    "os.setxattr": ((0, -1),),
    "os.removexattr": ((0, -1),),
    "shutil.rmtree": ((0, 1),),
    "shutil.copyfile": ((1, -1),),
    "shutil.copymode": ((1, -1),),
    "shutil.copystat": ((1, -1),),
    "shutil.copytree": ((1, -1),),
    "shutil.move": ((0, -1), (1, -1)),
    "shutil.chown": ((0, -1),),
    "tempfile.mkstemp": ((0, -1),),
    "tempfile.mkdtemp": ((0, -1),),
    "sqlite3.connect": ((0, -1),),
}

#: Every detail string the worker may report; the supervisor accepts no other.
KNOWN_EVENTS: frozenset[str] = frozenset(
    _NETWORK_EVENTS
    + _PROCESS_EVENTS
    + _NATIVE_EVENTS
    + _FORBIDDEN_EVENTS
    + tuple(_PATH_EVENTS)
    + ("open", "socket.__new__")
)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ALLOWED_DEVICES = frozenset({"/dev/null"})


def _resolver(
    getcwd: Callable[[], str],
    lstat: Callable[[str], posix.stat_result],
    readlink: Callable[[str], str],
) -> Callable[[str], str | None]:
    """A realpath built only from the captured ``posix`` functions."""

    def resolve(path: str) -> str | None:
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        pending = path.split("/")[::-1]
        resolved = ""
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                resolved = resolved.rsplit("/", 1)[0]
                continue
            candidate = resolved + "/" + part
            try:
                mode = lstat(candidate).st_mode
            except OSError:
                resolved = candidate
                continue
            if mode & 0o170000 == 0o120000:
                hops += 1
                if hops > 40:
                    return None
                target = readlink(candidate)
                if target.startswith("/"):
                    resolved = ""
                pending.extend(target.split("/")[::-1])
            else:
                resolved = candidate
        return resolved or "/"

    return resolve


def arm(*, scratch: str, report_fd: int, send_lock: threading.Lock) -> None:
    """Install the tripwire for the rest of this process's life (irreversible)."""
    resolve = _resolver(posix.getcwd, posix.lstat, posix.readlink)
    root = resolve(scratch)
    if root is None or root == "/":
        raise ValueError("scratch directory must resolve to a directory below /")
    table: dict[str, str] = {}  # frozen below: the hook gets a read-only view
    for names, reason in (
        (_NETWORK_EVENTS, NETWORK),
        (_PROCESS_EVENTS, PROCESS_SPAWN),
        (_NATIVE_EVENTS, NATIVE_CODE),
        (_FORBIDDEN_EVENTS, FORBIDDEN_OPERATION),
    ):
        table.update(dict.fromkeys(names, reason))
    hook = _make_hook(
        table=MappingProxyType(table),
        path_events=MappingProxyType(dict(_PATH_EVENTS)),
        root=root,
        resolve=resolve,
        report_fd=report_fd,
        send_lock=send_lock,
        exit_codes=MappingProxyType(dict(EXIT_CODES)),
    )
    sys.addaudithook(hook)


def _make_hook(
    *,
    table: Mapping[str, str],
    path_events: Mapping[str, tuple[tuple[int, int], ...]],
    root: str,
    resolve: Callable[[str], str | None],
    report_fd: int,
    send_lock: threading.Lock,
    exit_codes: Mapping[str, int],
) -> Callable[[str, tuple[Any, ...]], None]:
    prefix = root + "/"
    dumps = orjson.dumps
    header = _wire._HEADER.pack
    write = posix.write
    exit_now = posix._exit
    readlink = posix.readlink
    fsdecode = os.fsdecode
    af_unix = int(getattr(__import__("socket"), "AF_UNIX", 1))
    write_flags = _WRITE_FLAGS
    devices = _ALLOWED_DEVICES
    in_memory = _sqlite_in_memory
    sqlite_path = _sqlite_path
    path_text = _path_reader()
    network, outside = NETWORK, WRITE_OUTSIDE_SCRATCH

    def trip(reason: str, event: str) -> None:
        try:
            body = dumps({"type": "contaminated", "reason": reason, "detail": event})
            data = header(len(body)) + body
            send_lock.acquire(timeout=1.0)
            while data:
                data = data[write(report_fd, data) :]
        finally:
            exit_now(exit_codes[reason])

    def inside(path: Any, dir_fd: Any) -> bool:
        kind = type(path)
        if kind is not str and kind is not bytes and kind is not int:
            path = path_text(path)
            if path is None:
                return False
        if type(path) is int:
            try:
                target = readlink(f"/proc/self/fd/{path}")
            except OSError:
                return False
            if not target.startswith("/"):
                return True  # a pipe, socket or anonymous inode: no file to protect
            path = target.removesuffix(" (deleted)")
        try:
            text = fsdecode(path)
        except (TypeError, UnicodeError):
            return False
        if not text.startswith("/") and type(dir_fd) is int and dir_fd >= 0:
            try:  # relative to a directory descriptor: resolve against its target
                base = readlink(f"/proc/self/fd/{dir_fd}")
            except OSError:
                return False
            if not base.startswith("/"):
                return False
            text = base + "/" + text
        if text in devices:
            return True
        real = resolve(text)
        return real is not None and (real == root or real.startswith(prefix))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        reason = table.get(event)
        if reason is not None:
            trip(reason, event)
        if event == "open":
            path, mode, flags = args[0], args[1], args[2]
            if type(mode) is str:
                writes = any(c in mode for c in "wax+")
            elif type(flags) is int:
                writes = bool(flags & write_flags)
            else:
                writes = mode is not None or flags is not None
            if writes and not inside(path, None):
                trip(outside, event)
            return
        spec = path_events.get(event)
        if spec is not None:
            for index, dir_fd_index in spec:
                if index >= len(args):
                    continue
                dir_fd = args[dir_fd_index] if 0 <= dir_fd_index < len(args) else None
                path = args[index]
                if event == "sqlite3.connect":
                    if in_memory(path):
                        continue
                    path = sqlite_path(path)
                if not inside(path, dir_fd):
                    trip(outside, event)
            return
        if event == "socket.__new__":
            family = args[1] if len(args) > 1 else None
            if type(family) is not int or (family != af_unix and family != -1):
                trip(network, event)

    return hook


def _path_reader() -> Callable[[Any], str | None]:
    """Text of a ``pathlib`` path read through the slots captured now (no method of
    the object or its class is called); None for anything else."""
    import pathlib

    posix_path, pure_posix_path = pathlib.PosixPath, pathlib.PurePosixPath
    slots = pathlib.PurePath.__dict__
    drv_of, root_of, parts_of = (slots[name].__get__ for name in ("_drv", "_root", "_parts"))

    def text(path: Any) -> str | None:
        kind = type(path)  # compared by identity: a metaclass's __eq__ is agent code
        if kind is not posix_path and kind is not pure_posix_path:
            return None
        try:
            drv, root, parts = drv_of(path), root_of(path), parts_of(path)
        except AttributeError:
            return None
        if type(drv) is not str or type(root) is not str or type(parts) is not list:
            return None
        if any(type(part) is not str for part in parts):
            return None
        if drv or root:
            return drv + root + "/".join(parts[1:])
        return "/".join(parts)

    return text


def _sqlite_in_memory(database: Any) -> bool:
    if type(database) is not str:
        return False
    return database in ("", ":memory:") or (
        database.startswith("file:") and "mode=memory" in database
    )


def _sqlite_path(database: Any) -> Any:
    """The file an SQLite database name points at (URI query and scheme removed)."""
    if type(database) is str and database.startswith("file:"):
        return database[len("file:") :].split("?", 1)[0].split("#", 1)[0]
    return database
