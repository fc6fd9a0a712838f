"""What the service holds between requests: one runtime (opened on first use), the
clock, the Cedar access policy, and the limiter list reads run under.

Why a limiter of its own: a sync route runs on the process's one thread pool (40
threads), and so does the request gate's token check. Were listings sync routes, a
burst of them would hold every thread and, through them, the database connections,
and ``/whoami`` would queue behind the burst. Listings are async routes instead that
hand their queries to at most ``LIST_THREADS`` threads of their own; the rest wait in
the event loop holding neither a thread nor a connection. ``ledger._engine`` sizes the
connection pool above both pools together, so no thread waits for a connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import Request

from .._runtime import Runtime
from ..governance import AccessPolicy

__all__ = ["LIST_THREADS", "ServiceState", "state_of"]

LIST_THREADS = 8
_T = TypeVar("_T")


@dataclass
class ServiceState:
    runtime_factory: Callable[[], Runtime]
    clock: Callable[[], datetime]
    access: AccessPolicy
    _runtime: Runtime | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _list_limiter: CapacityLimiter | None = None
    _limiter_loop: object = None

    @property
    def runtime(self) -> Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = self.runtime_factory()
            return self._runtime

    async def list_read(self, read: Callable[[], _T]) -> _T:
        """Run a listing's blocking reads on the list threads (see the module doc)."""
        loop = asyncio.get_running_loop()
        if self._list_limiter is None or self._limiter_loop is not loop:
            # one per event loop: a limiter's waiters belong to the loop they wait in
            self._list_limiter, self._limiter_loop = CapacityLimiter(LIST_THREADS), loop
        return await anyio.to_thread.run_sync(read, limiter=self._list_limiter)

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None


def state_of(request: Request) -> ServiceState:
    state = request.app.state.enclave
    assert isinstance(state, ServiceState)
    return state
