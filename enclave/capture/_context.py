"""The ``ctx`` an agent is given: every boundary crossing, the clock, randomness, and the
configuration and files it reads.

Agents are plain functions ``(ctx, inputs) -> outcome``. At capture the context calls
the live boundary and records it; at replay (``enclave.replay``) the same methods serve
the record instead and never call ``live``. Agents must get time, randomness,
environment variables and file contents only from here so that a replay is
deterministic and the specimen holds everything the run depended on.

A *cut* (``ctx.cut(name, compute)``) is a declared checkpoint: ``compute`` holds the work
before it and returns the state the rest of the run needs. Capture records that state as
one field of a ``cut`` step (encrypted and digested like any field); a full replay runs
``compute`` again and checks its state against the record; a replay *from* the cut
returns the recorded state and never runs ``compute`` (``docs/cuts.md``).
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from random import Random
from typing import Any

from ledger import StepKind

from ._spec import Answer, BoundarySpec, policy

__all__ = ["AsyncLiveCall", "Context", "LiveCall"]

LiveCall = Callable[[Mapping[str, Any]], "Answer | Mapping[str, Any]"]
AsyncLiveCall = Callable[[Mapping[str, Any]], "Awaitable[Answer | Mapping[str, Any]]"]
Compute = Callable[[], Any]


def cut_spec(name: str) -> BoundarySpec:
    """The step a cut is recorded as: no request, its state as one confidential field."""
    return BoundarySpec(
        kind=StepKind.CUT, name=name, request={}, response={"state": policy("confidential")}
    )


# What ``ctx.env`` and ``ctx.read`` cross: tool calls of reserved names (``_spec``), whose
# names, paths and contents are confidential content of the specimen.
ENV = BoundarySpec(
    kind=StepKind.TOOL,
    name="env",
    request={"name": policy("confidential")},
    response={"value": policy("confidential")},
)
READ = BoundarySpec(
    kind=StepKind.TOOL,
    name="read",
    request={"path": policy("confidential")},
    # base64 of the bytes (canonical JSON holds no bytes); null: the file did not exist
    response={"content": policy("confidential")},
)


def _live_env(request: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"value": os.environ.get(str(request["name"]))}


def _live_read(request: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        with open(str(request["path"]), "rb") as fh:
            content = fh.read()
    except FileNotFoundError:
        return {"content": None}
    return {"content": base64.b64encode(content).decode("ascii")}


# Streams the ambient interceptors draw from (``_ambient_draws``): refused to agents, so
# an agent's own streams never shift the draws served to its ``random``/``uuid`` calls.
RESERVED_STREAM_PREFIX = "ambient:"
_RESERVED_OPEN: ContextVar[bool] = ContextVar("replay_enclave_reserved_stream", default=False)


def reserved_stream(ctx: Context, name: str) -> Random:
    """The run's reserved stream ``name`` (``ambient:...``), as ``ctx.random`` gives it."""
    if not name.startswith(RESERVED_STREAM_PREFIX):
        raise ValueError("a reserved stream's name starts with the reserved prefix")
    token = _RESERVED_OPEN.set(True)
    try:
        return ctx.random(name)
    finally:
        _RESERVED_OPEN.reset(token)


def _call_key(call_id: str) -> tuple[tuple[str, str], int]:
    """``((agent, name), n)`` of a call id ``agent/name#n``."""
    agent, _, rest = call_id.partition("/")
    name, _, n = rest.rpartition("#")
    return (agent, name), int(n)


def stream_seed(seed: int, stream: str | None) -> int:
    """The seed of a run's random stream: the run's own seed, or for a named sub-stream
    the big-endian integer of SHA-256 over ``f"{seed}/{name}"`` in UTF-8."""
    if stream is None:
        return seed
    return int.from_bytes(hashlib.sha256(f"{seed}/{stream}".encode()).digest(), "big")


class Context(ABC):
    """The boundary an agent talks through. Subclasses record or replay."""

    # True for a context that serves the record (a replay): it never reads the world
    serves_record = False

    def __init__(self) -> None:
        # variables whose values are never recorded (``AgentSpec.credentials``)
        self.credentials: tuple[str, ...] = ()
        # per task and thread: concurrent work in other scopes never shifts this one's
        self._scope: ContextVar[str] = ContextVar("replay_enclave_agent_scope", default="main")
        self._call_counts: dict[tuple[str, str], int] = {}
        self._streams: dict[str | None, Random] = {}

    @property
    def agent(self) -> str:
        """The agent scope the calls made here are attributed to (``agent_scope``)."""
        return self._scope.get()

    @contextmanager
    def agent_scope(self, name: str) -> Iterator[None]:
        """Attribute the calls inside to one agent of a multi-agent trajectory. The scope
        is held per task and thread: a concurrent task keeps its own."""
        token = self._scope.set(name)
        try:
            yield
        finally:
            self._scope.reset(token)

    def _next_call_id(self, name: str) -> str:
        """The id of a call that starts now: ``agent/name#n``, the n-th call of that
        boundary in that scope to *start* (never to finish: under concurrency the order
        calls finish in is the world's, the order they start in is the agent's)."""
        agent = self._scope.get()
        key = (agent, name)
        n = self._call_counts.get(key, 0)
        self._call_counts[key] = n + 1
        return f"{agent}/{name}#{n}"

    def calls_started(self, name: str) -> int:
        """How many calls of boundary ``name`` have started in this run, in every agent
        scope (a call that raised before recording anything is given back)."""
        return sum(n for (_, boundary), n in self._call_counts.items() if boundary == name)

    def _release_call_id(self, call_id: str) -> None:
        """Give back the id of a call that recorded nothing (its live call raised), if no
        call of its boundary started since: a retried call keeps the id it had."""
        key, n = _call_key(call_id)
        if self._call_counts.get(key) == n + 1:
            self._call_counts[key] = n

    def _follow_call_id(self, call_id: str) -> None:
        """Later calls of this recorded call's boundary and scope get ids after it."""
        key, n = _call_key(call_id)
        self._call_counts[key] = max(self._call_counts.get(key, 0), n + 1)

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

    async def acall(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: AsyncLiveCall | LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        """``call`` for asynchronous agents: ``live`` may be a coroutine function. Each
        call has the id of its start (``_next_call_id``); a replay serves the calls of
        concurrent tasks (``asyncio.gather``) in the order their answers arrived at
        capture, whatever order they are issued in. A context that records and serves
        nothing awaits the world's answer and hands it to its own ``call``."""
        if self.serves_record:  # a replay overrides this: it never asks the world
            raise NotImplementedError("a context that serves the record defines acall")
        result = live(request)
        if inspect.isawaitable(result):
            result = await result
        return self.call(spec, request, live=lambda _request: result, alias=alias)

    def ambient(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        live: Callable[[], Mapping[str, Any]],
    ) -> Mapping[str, Any]:
        """One read of an ambient input (``_ambient``: an environment variable, a data
        file read outside ``ctx``): recorded once per distinct request at capture, served
        by content at replay. A context that records and serves nothing asks the world."""
        del spec, request
        return live()

    def holds(self, spec: BoundarySpec, request: Mapping[str, Any]) -> bool:
        """Whether the record holds the ambient read ``request`` of ``spec`` (only a
        context that ``serves_record`` is asked)."""
        del spec, request
        return False

    def cut(self, name: str, compute: Compute) -> Any:
        """A declared checkpoint (``AgentSpec.cuts``): the state ``compute`` returns (a
        JSON value) — computed and recorded at capture, computed and checked against the
        record by a full replay, served from the record by a replay from this cut or a
        later one, which never calls ``compute``. The state comes back as JSON gives it
        (lists, not tuples), at capture and replay alike. A context that records and
        serves nothing just does the work."""
        del name
        return compute()

    @abstractmethod
    def now(self) -> datetime:
        """The time the run may use (recorded at capture, served at replay)."""

    @abstractmethod
    def random(self, stream: str | None = None) -> Random:
        """The run's random stream, or its sub-stream named ``stream``.

        One stream per run: the first ``ctx.random()`` returns a generator seeded with
        the run's seed (the recorded one at capture, the sample's at replay) and every
        later call returns that same generator, so draws continue rather than repeat.
        ``ctx.random("name")`` is a separate stream seeded from (run seed, name) — see
        ``stream_seed`` — likewise created once and then shared. Each stream's creation
        is one recorded ``random`` step, matched once at replay. Names starting with
        ``ambient:`` are reserved (``ValueError``): they are the streams the global
        ``random`` module and generated ids are served from (``_ambient_draws``).
        """

    def _stream(
        self, stream: str | None, seed: int, open_step: Callable[[dict[str, Any]], None]
    ) -> Random:
        """The named (or main) stream, created on first use after ``open_step`` recorded
        or matched its ``random`` step (request ``{}`` or ``{"stream": name}``)."""
        if stream is not None and (type(stream) is not str or not stream):
            raise ValueError("a random stream is named by a non-empty string")
        if stream is not None and stream.startswith(RESERVED_STREAM_PREFIX):
            if not _RESERVED_OPEN.get():
                raise ValueError("stream names starting with 'ambient:' are reserved")
        generator = self._streams.get(stream)
        if generator is None:
            derived = stream_seed(seed, stream)  # before the step: a bad name records nothing
            open_step({} if stream is None else {"stream": stream})
            generator = Random(derived)  # noqa: S311 - replayable jitter, not crypto
            self._streams[stream] = generator
        return generator

    def env(self, name: str) -> str | None:
        """An environment variable, recorded at capture and served from the record at
        replay (the host's environment then is never read)."""
        if type(name) is not str or not name:
            raise ValueError("an environment variable is named by a non-empty string")
        value = self.call(ENV, {"name": name}, live=_live_env)["value"]
        if value is not None and type(value) is not str:
            raise ValueError("the recorded environment value is not text")
        return value

    def read(self, path: str | os.PathLike[str]) -> bytes:
        """A file's bytes, recorded at capture and served from the record at replay.
        A file that did not exist raises ``FileNotFoundError`` at capture and replay."""
        path = os.fspath(path)
        if type(path) is not str or not path:
            raise ValueError("a file is read by a non-empty text path")
        content = self.call(READ, {"path": path}, live=_live_read)["content"]
        if content is None:
            raise FileNotFoundError("no such file (as recorded at capture)")
        if type(content) is not str:
            raise ValueError("the recorded file content is not base64 text")
        return base64.b64decode(content, validate=True)
