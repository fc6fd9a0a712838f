"""Handlers that the sandbox tests run inside a worker, each attempting one thing
a replayed agent must never do (plus a few well-behaved ones).

Each takes ``request: dict`` and returns a dict; parameters (ports, paths) come in
the request, so nothing here is tied to one machine.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any


def echo(request: dict[str, Any]) -> dict[str, Any]:
    return {"echo": request}


def write_in_scratch(request: dict[str, Any]) -> dict[str, Any]:
    with open("inside.txt", "w", encoding="utf-8") as fh:
        fh.write("written inside scratch")
    with open("inside.txt", encoding="utf-8") as fh:
        text = fh.read()
    return {"text": text, "cwd": os.getcwd()}


def connect(request: dict[str, Any]) -> dict[str, Any]:
    socket.create_connection(("127.0.0.1", request["port"]), timeout=2).close()
    return {"connected": True}


def connect_swallowed(request: dict[str, Any]) -> dict[str, Any]:
    try:
        socket.create_connection(("127.0.0.1", request["port"]), timeout=2).close()
    except Exception as exc:  # noqa: BLE001 - the point: the agent swallows it
        return {"swallowed": type(exc).__name__}
    return {"connected": True}


def urlopen(request: dict[str, Any]) -> dict[str, Any]:
    import urllib.request

    urllib.request.urlopen(f"http://127.0.0.1:{request['port']}/", timeout=2)  # noqa: S310
    return {"fetched": True}


def http_client(request: dict[str, Any]) -> dict[str, Any]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", request["port"], timeout=2)
    conn.request("GET", "/")
    return {"status": conn.getresponse().status}


def resolve(request: dict[str, Any]) -> dict[str, Any]:
    return {"addresses": [a[4][0] for a in socket.getaddrinfo(request["host"], 80)]}


def gethostbyname(request: dict[str, Any]) -> dict[str, Any]:
    return {"address": socket.gethostbyname(request["host"])}


def run_subprocess(request: dict[str, Any]) -> dict[str, Any]:
    import subprocess

    done = subprocess.run(["touch", request["path"]], check=False)  # noqa: S603, S607
    return {"rc": done.returncode}


def run_os_system(request: dict[str, Any]) -> dict[str, Any]:
    return {"rc": os.system(f"touch {request['path']}")}  # noqa: S605


def fork(request: dict[str, Any]) -> dict[str, Any]:
    pid = os.fork()
    if pid == 0:
        with open(request["path"], "w", encoding="utf-8") as fh:
            fh.write("child")
        os._exit(0)
    os.waitpid(pid, 0)
    return {"forked": True}


def write_outside(request: dict[str, Any]) -> dict[str, Any]:
    try:
        with open(request["path"], "w", encoding="utf-8") as fh:
            fh.write("escaped")
    except Exception as exc:  # noqa: BLE001
        return {"swallowed": type(exc).__name__}
    return {"written": True}


def remove_outside(request: dict[str, Any]) -> dict[str, Any]:
    os.remove(request["path"])
    return {"removed": True}


def symlink_escape(request: dict[str, Any]) -> dict[str, Any]:
    os.symlink(request["path"], "link")
    with open("link", "w", encoding="utf-8") as fh:
        fh.write("escaped")
    return {"written": True}


def ctypes_connect(request: dict[str, Any]) -> dict[str, Any]:
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    addr = struct.pack("!HH4s8x", socket.AF_INET, request["port"], socket.inet_aton("127.0.0.1"))
    addr = struct.pack("=H", socket.AF_INET) + addr[2:]
    rc = libc.connect(fd, addr, len(addr))
    return {"rc": rc, "errno": ctypes.get_errno()}


def thread_connect(request: dict[str, Any]) -> dict[str, Any]:
    def attempt() -> None:
        try:
            socket.create_connection(("127.0.0.1", request["port"]), timeout=2).close()
        except Exception:  # noqa: BLE001, S110 - the point: the thread swallows it
            pass

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return {"survived": True}


def memory_bomb(request: dict[str, Any]) -> dict[str, Any]:
    blob = bytearray(4 << 30)
    return {"size": len(blob)}


def memory_growth(request: dict[str, Any]) -> dict[str, Any]:
    chunks = []
    while True:
        chunks.append(bytearray(16 << 20))


def sleep_forever(request: dict[str, Any]) -> dict[str, Any]:
    while True:
        time.sleep(3600)


def burn_cpu(request: dict[str, Any]) -> dict[str, Any]:
    n = 0
    while True:
        n += 1


def write_big_file(request: dict[str, Any]) -> dict[str, Any]:
    with open("big.bin", "wb") as fh:
        for _ in range(request["chunks"]):
            fh.write(b"\0" * (1 << 20))
    return {"written": True}


def raise_with_canary(request: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"payload leaked: {request['canary']}")


def raise_custom_class(request: dict[str, Any]) -> dict[str, Any]:
    leaky = type(request["canary"], (Exception,), {})
    raise leaky(request["canary"])


def set_rlimit(request: dict[str, Any]) -> dict[str, Any]:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    return {"raised": True}


def forge_reply(request: dict[str, Any]) -> dict[str, Any]:
    """Write garbage straight onto every inherited descriptor number."""
    for fd in range(3, 32):
        try:
            os.write(fd, b"\xff\xff\xff\xffgarbage")
        except OSError:
            continue
    time.sleep(5)
    return {"forged": True}


def not_a_dict(request: dict[str, Any]) -> Any:
    return ["not", "a", "dict"]


def read_env(request: dict[str, Any]) -> dict[str, Any]:
    return {"env": dict(os.environ), "fds": sorted(int(f) for f in os.listdir("/proc/self/fd"))}


def spawn_without_audit_event(request: dict[str, Any]) -> dict[str, Any]:
    """Spawn through the C helper that raises no audit event: only seccomp or the
    OS layer can stop this one."""
    import _posixsubprocess

    fork_exec: Any = _posixsubprocess.fork_exec  # 3.11 positional signature
    errpipe_read, errpipe_write = os.pipe()
    touch = b"/usr/bin/touch"
    pid = fork_exec(
        [touch, request["path"].encode()],
        [touch],
        True,
        (errpipe_write,),
        None,
        None,
        -1,
        -1,
        -1,
        -1,
        -1,
        -1,
        errpipe_read,
        errpipe_write,
        False,
        False,
        -1,
        None,
        None,
        None,
        -1,
        None,
        False,
    )
    os.waitpid(pid, 0)
    return {"spawned": True}


def reply(request: dict[str, Any]) -> dict[str, Any]:
    """Well-behaved: compute something from the request."""
    return {"total": sum(request["values"]), "count": len(request["values"])}


def tamper_then_write(request: dict[str, Any]) -> dict[str, Any]:
    """Rebind what a naive hook would call at event time, then write outside."""
    import os.path
    import sys

    scratch = os.getcwd()
    os.path.realpath = lambda *a, **k: scratch  # type: ignore[assignment]
    tripwire = sys.modules.get("enclave.sandbox.inside._tripwire")
    if tripwire is not None:
        tripwire._WRITE_FLAGS = 0  # type: ignore[attr-defined]
        tripwire._sqlite_in_memory = lambda *a: True  # type: ignore[attr-defined]
        tripwire.WRITE_OUTSIDE_SCRATCH = "nothing"  # type: ignore[attr-defined]
    with open(request["path"], "w", encoding="utf-8") as fh:
        fh.write("escaped")
    return {"written": True}


def sqlite_outside(request: dict[str, Any]) -> dict[str, Any]:
    import sqlite3

    conn = sqlite3.connect(f"file:{request['path']}?mode=rwc", uri=True)
    conn.execute("create table t (x)")
    conn.commit()
    return {"written": True}


def sqlite_in_scratch(request: dict[str, Any]) -> dict[str, Any]:
    import sqlite3

    conn = sqlite3.connect("local.db")
    conn.execute("create table t (x)")
    conn.execute("insert into t values (1)")
    conn.commit()
    memory = sqlite3.connect(":memory:")
    memory.execute("create table u (y)")
    count = conn.execute("select count(*) from t").fetchone()[0]
    conn.close()
    memory.close()
    return {"rows": count}


def tempfiles_in_scratch(request: dict[str, Any]) -> dict[str, Any]:
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "a", "b"))
        with open(os.path.join(tmp, "a", "b", "f.txt"), "w", encoding="utf-8") as fh:
            fh.write("x")
        shutil.rmtree(os.path.join(tmp, "a"))
    return {"ok": True}


def asyncio_agent(request: dict[str, Any]) -> dict[str, Any]:
    """Well-behaved async agent: an event loop (self-pipe socketpair) and a thread pool."""
    import asyncio

    async def main() -> int:
        loop = asyncio.get_running_loop()
        doubled = await loop.run_in_executor(None, lambda: request["n"] * 2)
        await asyncio.sleep(0)
        return int(doubled)

    return {"doubled": asyncio.run(main())}


def fd_targets(request: dict[str, Any]) -> dict[str, Any]:
    """What every descriptor this process holds points at (an inherited lock file, say)."""
    targets = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            targets[fd] = "?"
    return {"targets": targets}
