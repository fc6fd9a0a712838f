"""The saved head: the last position this host saw, kept outside the database.

A hash chain alone cannot see "edit a row and recompute every later hash" or "cut
the tail and move the tip back"; comparing the chain with a head saved elsewhere can.
The file holds ``{"index": N, "entry_hash": "sha256:..."}`` (canonical JSON), mode
0600, replaced atomically (temporary file, fsync, ``os.replace``). Writers on one host
take an exclusive ``flock`` on ``<path>.lock`` and never move the saved head backwards,
so a slow writer cannot overwrite a newer head with an older one.

A writer waits at most ``LOCK_WAIT_SECONDS`` for that lock and then leaves the head as
it is: a process frozen while holding it (stopped, paused, stuck in an fsync) must not
stop every other writer of the host, and its entries are in the database already. The
saved head then lags the chain until the next save, which weakens nothing but how
recent a cut of the tail it can reveal; it never moves backwards.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ._canonical import canonical_json, loads
from ._errors import CanonicalizationError, LedgerUnavailable
from ._records import LedgerPosition

__all__ = ["LOCK_WAIT_SECONDS", "read_saved_head", "save_head"]

LOCK_WAIT_SECONDS = 2.0


def read_saved_head(path: Path) -> LedgerPosition | None:
    """The position saved at ``path``, or ``None`` if no head was saved yet."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerUnavailable("saved head file cannot be read") from exc
    try:
        value = loads(data)
    except CanonicalizationError as exc:
        raise ValueError("saved head file is not valid JSON") from exc
    if (
        not isinstance(value, dict)
        or set(value) != {"index", "entry_hash"}
        or not isinstance(value["index"], int)
        or isinstance(value["index"], bool)
        or value["index"] < 0
        or not isinstance(value["entry_hash"], str)
    ):
        raise ValueError("saved head file has the wrong shape")
    return LedgerPosition(index=value["index"], entry_hash=value["entry_hash"])


def save_head(path: Path, position: LedgerPosition) -> None:
    """Record ``position`` at ``path`` unless a later position is already saved."""
    path = Path(path)
    try:
        lock_fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as exc:
        raise LedgerUnavailable("saved head lock cannot be opened") from exc
    try:
        if not _locked(lock_fd, LOCK_WAIT_SECONDS):
            return  # the holder, or the next save, records a head (module docstring)
        current = read_saved_head(path)
        if current is not None and current.index >= position.index:
            return
        _replace(path, canonical_json({"index": position.index, "entry_hash": position.entry_hash}))
    finally:
        os.close(lock_fd)  # closing releases the flock


def _locked(fd: int, wait: float) -> bool:
    """Take the exclusive lock on ``fd`` within ``wait`` seconds, or say it was not."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise LedgerUnavailable("saved head file cannot be written") from exc
