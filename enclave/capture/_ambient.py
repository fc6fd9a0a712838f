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
4. The enclave's own work inside an observed run (recording a step, a live boundary's
   own function) runs ``suspended``: only the agent's reads are ambient, and an
   interceptor never re-enters itself.
5. Ambient steps are named ``ambient:<kind>`` (``AMBIENT_NAMES``, a closed set; the
   ``ambient:`` prefix is reserved: no boundary, scope or cut may use it). Each distinct
   read is recorded once per run and served by content at replay, never by position.
6. A credential (``is_credential``) is recorded as present or absent only: its value is
   stored nowhere, and a replay sees ``CREDENTIAL_PLACEHOLDER`` where it was present.
"""

from __future__ import annotations

import fnmatch
import functools
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ledger import StepKind

from ._spec import AMBIENT_PREFIX, BoundarySpec, policy

if TYPE_CHECKING:
    from ._context import Context

__all__ = [
    "AMBIENT_CREDENTIAL",
    "AMBIENT_ENV",
    "AMBIENT_ENV_NAMES",
    "AMBIENT_FILE",
    "AMBIENT_NAMES",
    "AMBIENT_PREFIX",
    "CREDENTIAL_PATTERNS",
    "CREDENTIAL_PLACEHOLDER",
    "INSTALLERS",
    "RunState",
    "current",
    "install",
    "is_credential",
    "observing",
    "state_of",
    "suspended",
    "unobserved",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _ambient(name: str, request: str, response: str, rule: str = "confidential") -> BoundarySpec:
    return BoundarySpec(
        kind=StepKind.AMBIENT,
        name=AMBIENT_PREFIX + name,
        request={request: policy("confidential")} if request else {},
        response={response: policy(rule)},
    )


# one variable: {"name"} -> {"value": text or null}
AMBIENT_ENV = _ambient("env", "name", "value")
# the whole environment listed (iteration, len, copy): {} -> {"names": sorted names}
AMBIENT_ENV_NAMES = _ambient("environ", "", "names")
# a credential: {"name"} -> {"present": bool}; its value is never recorded
AMBIENT_CREDENTIAL = _ambient("credential", "name", "present", "internal")
# a data file read: {"path": absolute path} -> {"content": base64 or null (no such file)}
AMBIENT_FILE = _ambient("file", "path", "content")
AMBIENT_SPECS = (AMBIENT_ENV, AMBIENT_ENV_NAMES, AMBIENT_CREDENTIAL, AMBIENT_FILE)
AMBIENT_NAMES = frozenset(s.name for s in AMBIENT_SPECS)

# what a replay hands an agent for a credential that was present at capture
CREDENTIAL_PLACEHOLDER = "replay-enclave-placeholder"
# variable names treated as credentials whatever the agent declares (case-insensitive)
CREDENTIAL_PATTERNS = ("*_API_KEY", "*_TOKEN", "*_SECRET*", "*PASSWORD*")


def is_credential(name: str, declared: tuple[str, ...] = ()) -> bool:
    """Whether a variable's value must never be recorded (a default pattern or declared)."""
    upper = name.upper()
    if any(upper == d.upper() for d in declared):
        return True
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in CREDENTIAL_PATTERNS)


@dataclass
class RunState:
    """What one observed run did to its own world (never ambient for that run)."""

    env: dict[str, str | None] = field(default_factory=dict)  # set (or deleted: None)
    files_written: set[str] = field(default_factory=set)  # absolute paths opened to write
    env_listed: bool = False  # the environment's names are recorded for this run


_states: weakref.WeakKeyDictionary[Context, RunState] = weakref.WeakKeyDictionary()


def state_of(ctx: Context) -> RunState:
    state = _states.get(ctx)
    if state is None:
        state = _states[ctx] = RunState()
    return state


_ACTIVE: ContextVar[Context | None] = ContextVar("replay_enclave_ambient", default=None)
_SUSPENDED: ContextVar[bool] = ContextVar("replay_enclave_ambient_suspended", default=False)
_process: list[Context] = []  # the replay child's one run, seen from every thread

# one idempotent installer per kind of ambient input (its module appends it)
INSTALLERS: list[Callable[[], None]] = []
_installed: set[Callable[[], None]] = set()


def current() -> Context | None:
    """The observed run's context in this task/thread (or the replay child's), if any;
    None while the enclave's own work runs (``suspended``)."""
    if _SUSPENDED.get():
        return None
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
    # they register on import: variables, data files; the clock, global random, ids
    from . import _ambient_draws, _ambient_env, _ambient_file  # noqa: F401


@contextmanager
def suspended() -> Iterator[None]:
    """The code inside is the enclave's own (or a live boundary's): not observed."""
    token = _SUSPENDED.set(True)
    try:
        yield
    finally:
        _SUSPENDED.reset(token)


def unobserved(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``method`` suspended (the recorder's own work inside an observed run)."""

    @functools.wraps(method)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with suspended():
            return method(*args, **kwargs)

    return run


def ask(ctx: Context, spec: BoundarySpec, request: dict[str, Any], live: Callable[[], Any]) -> Any:
    """One ambient read through the run's context, the enclave's work suspended."""
    with suspended():
        return ctx.ambient(spec, request, live)


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
