"""The ``ctx`` an agent is given: every boundary crossing, the clock and randomness.

Agents are plain functions ``(ctx, inputs) -> outcome``. At capture the context calls
the live boundary and records it; at replay (``enclave.replay``) the same methods serve
the record instead and never call ``live``. Agents must get time and randomness only
from here so that a replay is deterministic.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ._spec import Answer, BoundarySpec

__all__ = ["Context", "LiveCall"]

LiveCall = Callable[[Mapping[str, Any]], "Answer | Mapping[str, Any]"]


class Context(ABC):
    """The boundary an agent talks through. Subclasses record or replay."""

    def __init__(self) -> None:
        self._agent = "main"
        self._call_counts: dict[tuple[str, str], int] = {}

    @property
    def agent(self) -> str:
        return self._agent

    @contextmanager
    def agent_scope(self, name: str) -> Iterator[None]:
        """Attribute the calls inside to one agent of a multi-agent trajectory."""
        previous, self._agent = self._agent, name
        try:
            yield
        finally:
            self._agent = previous

    def _next_call_id(self, name: str) -> str:
        key = (self._agent, name)
        n = self._call_counts.get(key, 0)
        self._call_counts[key] = n + 1
        return f"{self._agent}/{name}#{n}"

    @abstractmethod
    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        """Cross one boundary. Returns the response fields."""

    @abstractmethod
    def now(self) -> datetime:
        """The time the run may use (recorded at capture, served at replay)."""

    @abstractmethod
    def random(self) -> random.Random:
        """A generator seeded from the run's seed (recorded, or the sample's seed)."""
