"""Ambient environment variables: ``os.environ`` / ``os.getenv`` read outside ``ctx``.

``os.environ`` (and ``os.environb``, which shares it) keeps its variables in one dict,
``_data``; every read path of the mapping — ``[k]``, ``get``, ``in``, ``os.getenv``,
iteration, ``len``, ``copy`` — goes through it, and so does ``from os import environ``.
The installer replaces that dict once by ``_ObservedData``, a dict subclass holding the
same items, which asks ``current()`` on every use and is a plain dict when it is None.

While a run is observed:

1. A read of one variable is the ambient step ``ambient:env`` (``{"name"}`` ->
   ``{"value": text or null}``), recorded once per distinct name per run; a credential
   (``is_credential``: the default patterns or ``AgentSpec.credentials``) is
   ``ambient:credential`` (``{"name"}`` -> ``{"present": bool}``): the agent gets the
   real value at capture, the record holds presence only, a replay hands the agent
   ``CREDENTIAL_PLACEHOLDER``.
2. Listing the environment (iteration, ``len``, ``copy``, ``dict(os.environ)``) is one
   step ``ambient:environ`` (``{}`` -> ``{"names": sorted names}``); each value is then
   read (and recorded) one by one. A run's first read of any variable records that
   listing too, so that a replay can answer a read the capture did not make *when the
   variable did not exist at capture*: libraries read optional settings lazily (a
   schema built on first use asks whether its plugins are disabled), and a replay
   worker that starts cold makes reads a warm capture process did not. A variable that
   existed but was not read stays unanswerable (the branch abstains, ``ambient_input``).
3. A variable the run set or deleted itself (``os.environ[k] = v``, ``del``, ``pop``)
   is the run's own state: later reads of it in the run are answered from it and are not
   ambient. The process environment is still written (``putenv``), as without us.

Not covered: C code reading ``environ`` itself (``getenv(3)`` in an extension, a child
process started with the inherited environment), and reads made before the run started
and cached (a module that read a variable at import).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._ambient import (
    AMBIENT_CREDENTIAL,
    AMBIENT_ENV,
    AMBIENT_ENV_NAMES,
    CREDENTIAL_PLACEHOLDER,
    INSTALLERS,
    ask,
    current,
    is_credential,
    state_of,
)

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["install_env"]


def _name(key: Any) -> str:
    return os.fsdecode(key) if isinstance(key, bytes) else str(key)


def _key(name: str) -> Any:
    # POSIX keeps bytes keys (``os.environb`` shares the dict); elsewhere text
    return os.fsencode(name) if os.name == "posix" else name


class _ObservedData(dict[Any, Any]):
    """``os.environ._data``: a plain dict unless a run is observed."""

    def _read(self, name: str) -> str | None:
        ctx = current()
        assert ctx is not None
        state = state_of(ctx)
        if name in state.env:
            return state.env[name]
        if not state.env_listed:
            state.env_listed = True
            if not ctx.serves_record:
                self._listing(ctx)
        raw = dict.get(self, _key(name))
        live_value = None if raw is None else _name(raw)
        credential = is_credential(name, ctx.credentials)
        if ctx.serves_record and self._absent_at_capture(ctx, name, credential=credential):
            return None
        if credential:
            answer = ask(
                ctx,
                AMBIENT_CREDENTIAL,
                {"name": name},
                lambda: {"present": live_value is not None},
            )
            if answer.get("present") is not True:
                return None
            # capture: the agent needs the real key; a replay never sees one
            if ctx.serves_record or live_value is None:
                return CREDENTIAL_PLACEHOLDER
            return live_value
        answer = ask(ctx, AMBIENT_ENV, {"name": name}, lambda: {"value": live_value})
        value = answer.get("value")
        if value is not None and type(value) is not str:
            raise ValueError("the recorded environment value is not text")
        return value

    def _listing(self, ctx: Context) -> list[str]:
        answer = ask(
            ctx,
            AMBIENT_ENV_NAMES,
            {},
            lambda: {"names": sorted(_name(k) for k in dict.keys(self))},
        )
        names = answer.get("names")
        if not isinstance(names, list) or not all(type(n) is str for n in names):
            raise ValueError("the recorded environment names are not a list of text")
        return names

    def _absent_at_capture(self, ctx: Context, name: str, *, credential: bool) -> bool:
        """At replay: the record holds no read of ``name`` but lists the capture's
        environment, and ``name`` was not in it."""
        spec = AMBIENT_CREDENTIAL if credential else AMBIENT_ENV
        if ctx.holds(spec, {"name": name}) or not ctx.holds(AMBIENT_ENV_NAMES, {}):
            return False
        return name not in self._listing(ctx)

    def _names(self) -> list[str]:
        ctx = current()
        assert ctx is not None
        names = self._listing(ctx)
        own = state_of(ctx).env
        listed = [n for n in names if own.get(n, n) is not None]
        return listed + [n for n, v in own.items() if v is not None and n not in names]

    # -- reads ------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if current() is None:
            return dict.__getitem__(self, key)
        value = self._read(_name(key))
        if value is None:
            raise KeyError(key)
        return _key(value)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if current() is None:
            return dict.__contains__(self, key)
        return self._read(_name(key)) is not None

    def __iter__(self) -> Iterator[Any]:
        if current() is None:
            return dict.__iter__(self)
        return iter([_key(n) for n in self._names()])

    def __len__(self) -> int:
        if current() is None:
            return dict.__len__(self)
        return len(self._names())

    def keys(self) -> Any:
        if current() is None:
            return dict.keys(self)
        return [_key(n) for n in self._names()]

    def items(self) -> Any:
        if current() is None:
            return dict.items(self)
        return [(k, self[k]) for k in self.keys()]

    def values(self) -> Any:
        if current() is None:
            return dict.values(self)
        return [v for _, v in self.items()]

    def copy(self) -> dict[Any, Any]:
        if current() is None:
            return dict(dict.items(self))
        return dict(self.items())

    # -- writes: the run's own state --------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        ctx = current()
        if ctx is not None:
            state_of(ctx).env[_name(key)] = _name(value)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        ctx = current()
        if ctx is None:
            dict.__delitem__(self, key)
            return
        name = _name(key)
        existed = self._read(name) is not None  # what the run saw: capture and replay alike
        state_of(ctx).env[name] = None
        dict.pop(self, key, None)
        if not existed:
            raise KeyError(key)

    def pop(self, key: Any, *default: Any) -> Any:
        try:
            value = self[key]
        except KeyError:
            if default:
                return default[0]
            raise
        del self[key]
        return value


def install_env() -> None:
    """Replace ``os.environ``'s dict (shared with ``os.environb``) once."""
    data = os.environ._data  # type: ignore[attr-defined]  # the mapping's one store
    if isinstance(data, _ObservedData):
        return
    observed = _ObservedData(dict.items(data))
    os.environ._data = observed  # type: ignore[attr-defined]
    environb = getattr(os, "environb", None)
    if environb is not None and environb._data is data:
        environb._data = observed


INSTALLERS.append(install_env)
