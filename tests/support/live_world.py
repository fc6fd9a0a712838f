"""The live world of an asynchronous test agent: reachable only during a capture.

A test agent's live functions ``await WORLD.reach(service)`` (or ``WORLD.check``): outside ``with
WORLD.open():`` that raises, so a replay that ever went live would end its run with
``agent_error``; inside it, the call waits a random latency of the world's own (not the
run's randomness: nothing the agent may draw), so the answers of a concurrent batch
arrive in an order the world decides.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from contextlib import contextmanager


class LiveWorld:
    def __init__(self, max_latency: float) -> None:
        self._open = False
        self._max_latency = max_latency
        self._latency = random.SystemRandom()

    @contextmanager
    def open(self) -> Iterator[None]:
        """The live world for one capture."""
        self._open = True
        try:
            yield
        finally:
            self._open = False

    def check(self, service: str) -> None:
        """Raise unless the world is open (a live call without a latency)."""
        if not self._open:
            raise RuntimeError(f"live call to {service} outside capture")

    async def reach(self, service: str) -> None:
        self.check(service)
        await asyncio.sleep(self._latency.uniform(0, self._max_latency))
