"""Handlers for tests/boundary/test_sandbox_zygote.py: one job holds a canary, a later job hunts it.

``job`` is preloaded (trusted, like ``enclave.replay.worker._entry``): it runs in the
job's template and keeps what ``hold`` sent in a module global and in a scratch file, as
a job keeps its trajectories. ``search`` runs :func:`hunt` as agent code in a fresh run:
it knows the canary's prefix and the SHA-256 of what follows it, never the canary, and
reads every process's memory it can open, every process's environment and command line,
every file below scratch and the working directory, and the module globals it inherited.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

SECRET_BYTES = 32
_held: dict[str, str] = {}
Fresh = Callable[[Callable[[], dict[str, Any]]], dict[str, Any]]


def job(request: dict[str, Any], fresh: Fresh) -> dict[str, Any]:
    if request["op"] == "hold":
        _held["payload"] = str(request["payload"])
        with open("held.txt", "w", encoding="utf-8") as fh:
            fh.write(_held["payload"])
        return {"held": True}
    if request["op"] == "sleep":
        return fresh(lambda: {"slept": time.sleep(3600)})
    if request["op"] == "list":
        return fresh(lambda: {"entries": sorted(os.listdir("."))})
    if request["op"] == "search":
        return fresh(functools.partial(hunt, str(request["prefix"]), str(request["digest"])))
    raise ValueError("unknown op")


def _hits(data: bytes, prefix: bytes, digest: str) -> tuple[int, bool]:
    """Occurrences of ``prefix`` in ``data``, and whether one is followed by the secret."""
    count, start = 0, 0
    while (at := data.find(prefix, start)) >= 0:
        count += 1
        tail = data[at + len(prefix) : at + len(prefix) + SECRET_BYTES]
        if hashlib.sha256(tail).hexdigest() == digest:
            return count, True
        start = at + 1
    return count, False


def _memory(pid: str, prefix: bytes, digest: str) -> tuple[int, int, bool]:
    """(bytes read, prefix hits, secret found) over the readable mappings of ``pid``."""
    read = hits = 0
    try:
        with open(f"/proc/{pid}/maps", encoding="ascii") as fh:
            regions = [line.split() for line in fh]
        mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return 0, 0, False
    try:
        for fields in regions:
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            low, high = (int(x, 16) for x in fields[0].split("-"))
            for offset in range(low, high, 8 << 20):
                try:
                    chunk = os.pread(mem, min(8 << 20, high - offset) + 64, offset)
                except OSError:
                    try:
                        chunk = os.pread(mem, min(8 << 20, high - offset), offset)
                    except OSError:
                        break
                read += len(chunk)
                count, found = _hits(chunk, prefix, digest)
                hits += count
                if found:
                    return read, hits, True
    finally:
        os.close(mem)
    return read, hits, False


def _files(root: str, prefix: bytes, digest: str) -> list[str]:
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as fh:
                    if _hits(fh.read(), prefix, digest)[1]:
                        found.append(f"file:{name}")
            except OSError:
                continue
    return found


def hunt(prefix_text: str, digest: str) -> dict[str, Any]:
    prefix = prefix_text.encode()
    found: list[str] = []
    scanned: dict[str, int] = {}
    prefix_hits = 0
    me = str(os.getpid())
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    if _hits(fh.read(), prefix, digest)[1]:
                        found.append(f"{name}:{'self' if pid == me else pid}")
            except OSError:
                continue
        read, hits, secret = _memory(pid, prefix, digest)
        scanned["self" if pid == me else pid] = read
        prefix_hits += hits
        if secret:
            found.append(f"memory:{'self' if pid == me else pid}")
    found += _files(os.getcwd(), prefix, digest)
    if os.path.isdir("/scratch"):
        found += _files("/scratch", prefix, digest)
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            text = str(value) if isinstance(value, dict | str) else ""
            if _hits(text.encode(errors="replace"), prefix, digest)[1]:
                found.append(f"module:{getattr(module, '__name__', '?')}")
    return {"found": sorted(set(found)), "scanned": scanned, "prefix_hits": prefix_hits}
