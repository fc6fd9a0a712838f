"""A home's payloads are either in use or moving, never both.

A runtime takes a shared ``flock`` on ``<home>/payloads.lock`` the first time it touches
payloads (a capture's writer, a replay's read, a grant's wrapped key, an audit's
inference answer, an erasure) and keeps it until it is closed; ``payloads migrate``
takes the lock exclusively. So:

- a migration refuses to start while a capture, a worker or the service of the home
  holds payloads, instead of copying a capture half-written and then deleting the file
  it is still writing to;
- while one runs, payload use refuses (one line, nothing written);
- a runtime opened before a migration and touching payloads after it finds the home
  bound to the other store and refuses, instead of writing into the one just emptied.

The lock is the home's: a home on another host sharing the database has its own.
The descriptor is opened close-on-exec, so a sandboxed replay never inherits it; a
process forked from a holder shares it, and the lock lasts until both have closed it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .._errors import InfrastructureError
from ..keys import WrappedKey
from ._interface import PayloadBackend, SpecimenWriter

__all__ = ["LOCK_FILE", "GuardedPayloads", "PayloadsMoving", "moving_payloads"]

LOCK_FILE = "payloads.lock"


class PayloadsMoving(InfrastructureError):
    """The home's payloads are being moved, or were moved since this runtime opened."""


def _open_lock(home_root: Path) -> int:
    try:
        return os.open(home_root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        raise InfrastructureError("the home's payload lock is unavailable") from None


def _locked(home_root: Path, mode: int, refusal: str) -> int:
    """The lock file's descriptor holding ``mode`` (shared or exclusive), or
    ``PayloadsMoving(refusal)`` at once if another process holds the other mode."""
    fd = _open_lock(home_root)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PayloadsMoving(refusal) from None
    return fd


@contextmanager
def moving_payloads(home_root: Path) -> Iterator[None]:
    """Hold the home's payloads exclusively (``payloads migrate``), or refuse at once."""
    fd = _locked(
        home_root,
        fcntl.LOCK_EX,
        "payloads of this home are in use (a capture, a worker or the service): "
        "stop them, then migrate",
    )
    try:
        yield
    finally:
        os.close(fd)


class GuardedPayloads:
    """``PayloadBackend`` over ``inner`` that holds the home's shared payload lock from
    its first use until ``release``, and checks the home is still bound to ``store``."""

    def __init__(
        self, inner: PayloadBackend, *, home_root: Path, store: str, bound: Callable[[], str]
    ) -> None:
        self._inner, self._root, self._store, self._bound = inner, home_root, store, bound
        self._fd: int | None = None
        self._lock = threading.Lock()

    def hold(self) -> None:
        """Take the lock now (a capture, before it records anything), or refuse."""
        self._held()

    def _held(self) -> PayloadBackend:
        with self._lock:
            if self._fd is None:
                self._fd = self._take()
            return self._inner

    def _take(self) -> int:
        fd = _locked(
            self._root,
            fcntl.LOCK_SH,
            "the home's payloads are being moved (payloads migrate): try again when it ends",
        )
        bound = self._bound()
        if bound != self._store:
            os.close(fd)
            raise PayloadsMoving(f"the home's payloads were moved to {bound}: start this again")
        return fd

    @property
    def store(self) -> str:
        """``files`` or ``database``: the store this runtime opened."""
        return self._store

    def release(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)  # closing the descriptor releases the lock

    # -- PayloadBackend ------------------------------------------------------------------

    def open_writer(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        data_key: bytes,
        durable: bool,
    ) -> SpecimenWriter:
        return self._held().open_writer(
            tenant_id, specimen_id, wrapped=wrapped, data_key=data_key, durable=durable
        )

    def wrapped_key(self, tenant_id: str, specimen_id: str) -> WrappedKey:
        return self._held().wrapped_key(tenant_id, specimen_id)

    def replace_wrapped_key(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> None:
        self._held().replace_wrapped_key(tenant_id, specimen_id, wrapped)

    def read_fields(
        self, tenant_id: str, specimen_id: str, *, data_key: bytes
    ) -> dict[tuple[int, str, str], bytes]:
        return self._held().read_fields(tenant_id, specimen_id, data_key=data_key)

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        return self._held().erase(tenant_id, specimen_id)

    def answer(self, tenant_id: str, specimen_id: str, key: str) -> bytes | None:
        return self._held().answer(tenant_id, specimen_id, key)

    def keep_answer(self, tenant_id: str, specimen_id: str, key: str, sealed: bytes) -> None:
        self._held().keep_answer(tenant_id, specimen_id, key, sealed)

    def answers(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[str, bytes]]:
        return self._held().answers(tenant_id, specimen_id)

    def specimens(self) -> list[tuple[str, str]]:
        return self._held().specimens()

    def frames(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[bytes, bytes]]:
        return self._held().frames(tenant_id, specimen_id)

    def import_specimen(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        frames: Iterable[tuple[bytes, bytes]],
    ) -> None:
        self._held().import_specimen(tenant_id, specimen_id, wrapped=wrapped, frames=frames)
