"""Ambient inputs: what agent code reads from the world outside ``ctx``.

Real agent code (and every agent framework) reads environment variables, data files,
the wall clock, the global ``random`` module and generated ids directly. While a run is
*observed* (``observing``), those reads are routed through the run's ``Context``: the
recorder records them, the replay serves them from the record (or the branch abstains,
``ambient_input``). Outside an observed run every interceptor behaves exactly like the
function it replaces.

Invariants:

1. Interceptors are installed once per process and never removed (``install``); each
   one asks ``current()`` on every use and does nothing of its own when it is None.
2. At capture the observed context is per task/thread (a ``ContextVar``): other work in
   the same process is never recorded. In a replay child the context is process-wide
   (every thread of the run is the run's).
3. Each kind of ambient input lives in a module of its own that registers one
   installer in ``INSTALLERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["INSTALLERS", "current", "install", "observing"]

_ACTIVE: ContextVar[Context | None] = ContextVar("replay_enclave_ambient", default=None)
_process: list[Context] = []  # the replay child's one run, seen from every thread

# one idempotent installer per kind of ambient input (its module appends it)
INSTALLERS: list[Callable[[], None]] = []
_installed: set[Callable[[], None]] = set()


def current() -> Context | None:
    """The observed run's context in this task/thread (or the replay child's), if any."""
    return _ACTIVE.get() or (_process[0] if _process else None)


def install() -> None:
    """Install every interceptor not installed yet (idempotent, never undone)."""
    _load_kinds()
    for installer in INSTALLERS:
        if installer not in _installed:
            installer()
            _installed.add(installer)


def _load_kinds() -> None:
    """Import the modules of each kind so that they register their installers."""
    from . import _ambient_draws  # noqa: F401 - the clock, global random, generated ids


@contextmanager
def observing(ctx: Context, *, process_wide: bool = False) -> Iterator[None]:
    """Route the ambient reads of the code run inside through ``ctx``."""
    install()
    token = _ACTIVE.set(ctx)
    if process_wide:
        _process.append(ctx)
    try:
        yield
    finally:
        if process_wide:
            _process.remove(ctx)
        _ACTIVE.reset(token)
