"""What the service holds between requests: one runtime (opened on first use), the
clock, the Cedar access policy."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from fastapi import Request

from .._runtime import Runtime
from ..governance import AccessPolicy

__all__ = ["ServiceState", "state_of"]


@dataclass
class ServiceState:
    runtime_factory: Callable[[], Runtime]
    clock: Callable[[], datetime]
    access: AccessPolicy
    _runtime: Runtime | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def runtime(self) -> Runtime:
        with self._lock:
            if self._runtime is None:
                self._runtime = self.runtime_factory()
            return self._runtime

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                self._runtime.close()
                self._runtime = None


def state_of(request: Request) -> ServiceState:
    state = request.app.state.enclave
    assert isinstance(state, ServiceState)
    return state
