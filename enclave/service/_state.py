"""What the service holds between requests: one runtime (opened on first use), the
clock, the Cedar access policy, and the limiter list reads run under.

Threads. Sync routes, and the request gate's token check, run on the event loop's
default thread pool, bounded to ``REQUEST_THREADS`` (anyio's default is 40). With a
connection pool that keeps one connection per thread (``ledger._engine.POOL_SIZE``,
request threads plus list threads), no request waits for a connection and none opens
one: with 40 threads a burst of detail reads opened and closed dozens of PostgreSQL
backends a second. Measured, 50 closed-loop clients, ``serve --workers 2``, PostgreSQL,
two cores: 2,902 requests in 20 s with 40 threads and 5 kept connections, 3,647 with 8
and 10 (list p99 1.2 s -> 0.9-1.2 s, ``/whoami`` p99 under filters 66 -> 37 ms); on
SQLite the thread count made no difference beyond the run-to-run noise.

Why listings have a limiter of their own: were they sync routes, a burst of them would
hold every request thread and, through them, the database connections, and ``/whoami``
would queue behind the burst. Listings are async routes instead that hand their
queries, validation and JSON to ``LIST_THREADS`` thread(s) of their own; the rest wait
in the event loop holding neither a thread nor a connection. Two threads: a page is
mostly Python under the process's one interpreter lock, so more threads add contention
and every other request's turn on the lock comes later (``/whoami`` p99 under 45 filter
clients on SQLite: 23-28 ms with one thread, 44-59 ms with two); one leaves a process
idle while PostgreSQL answers (list p99 at one request per client-second: 330-400 ms
with one, 54-102 ms with two). Run one process per core (``serve --workers``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import Request, Response
from pydantic import BaseModel

from .._runtime import Runtime
from ..governance import AccessPolicy

__all__ = ["LIST_THREADS", "REQUEST_THREADS", "ServiceState", "bound_request_threads", "state_of"]

LIST_THREADS = 2
REQUEST_THREADS = 8


def bound_request_threads() -> None:
    """Bound the running event loop's default thread pool (sync routes, the token check)."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS


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

    async def list_read(self, read: Callable[[], Any], model: type[BaseModel]) -> Response:
        """Run a listing's reads on the list threads (see the module doc), and there too
        its validation against ``model`` and its JSON: a page of 50 rows costs a few
        milliseconds of it, which on the event loop every other request would wait for."""
        loop = asyncio.get_running_loop()
        if self._list_limiter is None or self._limiter_loop is not loop:
            # one per event loop: a limiter's waiters belong to the loop they wait in
            self._list_limiter, self._limiter_loop = CapacityLimiter(LIST_THREADS), loop

        def answer() -> bytes:
            return model.model_validate(read()).model_dump_json().encode()

        body = await anyio.to_thread.run_sync(answer, limiter=self._list_limiter)
        return Response(content=body, media_type="application/json")

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None


async def state_of(request: Request) -> ServiceState:
    # async: a dependency declared with plain def runs on the thread pool, a hop per request
    state = request.app.state.enclave
    assert isinstance(state, ServiceState)
    return state
