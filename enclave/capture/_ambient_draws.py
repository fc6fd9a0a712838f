"""Ambient draws: the wall clock, the global ``random`` module and generated ids that
agent code reads directly are served from the run.

While a run is observed (``_ambient.current()``):

* the module-level functions of ``random`` (every one bound to the process's global
  generator: ``random.random``, ``choice``, ``shuffle``, ``gauss``, ``randbytes``, ...,
  ``seed``, ``getstate``, ``setstate``) act on the run's reserved stream
  ``ctx.random("ambient:random")``: one recorded ``random`` step at capture, at replay
  seeded from the sample's seed with the usual departure rule. ``random.seed(x)`` seeds
  that stream (the run's, nobody else's); ``random.seed()`` without a value reseeds it
  from its own next draw — the run's entropy is its seed, not the host's;
* ``uuid.uuid4()`` and ``uuid.uuid1()`` are built from 128 bits of the reserved stream
  ``ctx.random("ambient:ids")`` (version 4, or version 1 with random time, clock
  sequence and a multicast-marked node, RFC 4122 4.5; a ``node``/``clock_seq`` passed
  in is kept);
* ``time.time()``, ``time.time_ns()`` and the no-argument forms of ``localtime``,
  ``gmtime``, ``ctime``, ``asctime`` and ``strftime(format)`` are the run's time,
  ``ctx.now()``: recorded once at capture, served at replay; a replay that reads it
  where the record holds none ends ``unservable`` (row ``<agent>/clock#n``).

Invariants:

1. Outside an observed run — and in code that runs *for* the run rather than as it (a
   live call at capture, ``_ambient.suspended``; the context's own work while an interceptor asks
   it) — every interceptor is the original, looked up when called (``random`` acts on
   the process's ``random._inst``).
2. The interceptors' streams are reserved (``_context.RESERVED_STREAM_PREFIX``): an
   agent's ``ctx.random("ambient:...")`` is refused, so its draws never shift these.
3. Deliberately not served: ``os.urandom``, ``secrets`` and ``random.SystemRandom`` (they
   are for secrets, which a replay must not repeat; a decision that depends on them
   shows as an unreproduced or unstable baseline); ``random.Random()`` instances the
   agent seeds from the host; ``time.monotonic``/``perf_counter`` (durations stay real);
   ``datetime.now()`` (its class cannot be intercepted without replacing it, which
   breaks ``isinstance`` elsewhere: agents use ``ctx.now()``); names bound before the
   interceptors were installed (``from random import random``); the local time zone of
   ``localtime``/``ctime``/``asctime``/``strftime`` (the process's).
"""

from __future__ import annotations

import functools
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ._ambient import INSTALLERS, current, suspended
from ._context import reserved_stream

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["RANDOM_STREAM", "IDS_STREAM"]

RANDOM_STREAM = "ambient:random"
IDS_STREAM = "ambient:ids"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_BITS_48 = (1 << 48) - 1
_MULTICAST = 1 << 40  # a node that is no network card's address (RFC 4122 4.5)


def _stream(ctx: Context, name: str) -> random.Random:
    with suspended():  # the context's own work reads the real clock and ids
        return reserved_stream(ctx, name)


def _run_time(ctx: Context) -> datetime:
    with suspended():
        moment = ctx.now()
    return moment if moment.tzinfo is not None else moment.astimezone()


# -- the global random module -------------------------------------------------------------


def _global_names() -> tuple[str, ...]:
    """The module-level functions of ``random`` that act on its global generator."""
    shared = random._inst  # noqa: SLF001 - the stdlib's own global generator
    return tuple(
        name
        for name in sorted(random.__all__)
        if getattr(getattr(random, name, None), "__self__", None) is shared
    )


def _served_random(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def served(*args: Any, **kwargs: Any) -> Any:
        ctx = current()
        generator = random._inst if ctx is None else _stream(ctx, RANDOM_STREAM)  # noqa: SLF001
        return getattr(generator, name)(*args, **kwargs)

    return served


def _served_seed(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def seed(a: Any = None, version: int = 2) -> None:
        ctx = current()
        if ctx is None:
            random._inst.seed(a, version)  # noqa: SLF001
            return
        generator = _stream(ctx, RANDOM_STREAM)
        # no value: "fresh" entropy, which in a run is the run's own stream
        generator.seed(generator.getrandbits(128) if a is None else a, version)

    return seed


# -- generated ids -----------------------------------------------------------------------


def _served_uuid4(original: Callable[[], uuid.UUID]) -> Callable[[], uuid.UUID]:
    @functools.wraps(original)
    def uuid4() -> uuid.UUID:
        ctx = current()
        if ctx is None:
            return original()
        return uuid.UUID(int=_stream(ctx, IDS_STREAM).getrandbits(128), version=4)

    return uuid4


def _served_uuid1(original: Callable[..., uuid.UUID]) -> Callable[..., uuid.UUID]:
    @functools.wraps(original)
    def uuid1(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
        ctx = current()
        if ctx is None:
            return original(node, clock_seq)
        bits = _stream(ctx, IDS_STREAM).getrandbits(128)
        if node is None:
            node = (bits & _BITS_48) | _MULTICAST
        if clock_seq is None:
            clock_seq = (bits >> 48) & 0x3FFF
        stamp = bits >> 68  # 60 bits of time
        fields = (
            stamp & 0xFFFFFFFF,
            (stamp >> 32) & 0xFFFF,
            (stamp >> 48) & 0x0FFF,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        )
        return uuid.UUID(fields=fields, version=1)

    return uuid1


# -- the wall clock ----------------------------------------------------------------------


def _served_clock() -> dict[str, Callable[..., Any]]:
    real_time, real_time_ns = time.time, time.time_ns
    real_localtime, real_gmtime = time.localtime, time.gmtime
    real_ctime, real_asctime, real_strftime = time.ctime, time.asctime, time.strftime

    @functools.wraps(real_time)
    def time_(*args: Any) -> float:
        ctx = current()
        return real_time(*args) if ctx is None else _run_time(ctx).timestamp()

    @functools.wraps(real_time_ns)
    def time_ns(*args: Any) -> int:
        ctx = current()
        if ctx is None:
            return real_time_ns(*args)
        return (_run_time(ctx) - _EPOCH) // _MICROSECOND * 1000

    def at_run_time(real: Callable[..., Any]) -> Callable[..., Any]:
        # the no-argument (or None) form means "now": the run's time
        @functools.wraps(real)
        def served(*args: Any) -> Any:
            ctx = current()
            if ctx is None or (args and args[0] is not None):
                return real(*args)
            return real(_run_time(ctx).timestamp())

        return served

    @functools.wraps(real_asctime)
    def asctime(*args: Any) -> str:
        ctx = current()
        if ctx is None or (args and args[0] is not None):
            return real_asctime(*args)
        return real_asctime(real_localtime(_run_time(ctx).timestamp()))

    @functools.wraps(real_strftime)
    def strftime(*args: Any) -> str:
        ctx = current()
        if ctx is None or len(args) != 1:
            return real_strftime(*args)
        return real_strftime(args[0], real_localtime(_run_time(ctx).timestamp()))

    return {
        "time": time_,
        "time_ns": time_ns,
        "localtime": at_run_time(real_localtime),
        "gmtime": at_run_time(real_gmtime),
        "ctime": at_run_time(real_ctime),
        "asctime": asctime,
        "strftime": strftime,
    }


def _install() -> None:
    """Replace the module attributes once (``_ambient.install``); never undone."""
    for name in _global_names():
        original = getattr(random, name)
        served = _served_seed(original) if name == "seed" else _served_random(name, original)
        setattr(random, name, served)
    uuid.uuid4 = _served_uuid4(uuid.uuid4)
    uuid.uuid1 = _served_uuid1(uuid.uuid1)
    for name, served_clock in _served_clock().items():
        setattr(time, name, served_clock)


INSTALLERS.append(_install)
