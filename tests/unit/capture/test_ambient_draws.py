"""The interceptors of the clock, the global ``random`` module and generated ids, under
a context that records nothing: what they serve while a run is observed, what they
leave alone."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from enclave.capture import BoundarySpec, Context, LiveCall, observing

MOMENT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


class Still(Context):
    """A run at ``MOMENT`` on ``seed`` whose streams are opened, and noted, in memory."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.opened: list[dict[str, Any]] = []

    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        raise AssertionError("no boundary here")

    def now(self) -> datetime:
        return MOMENT

    def random(self, stream: str | None = None) -> random.Random:
        return self._stream(stream, self.seed, self.opened.append)


def stream(seed: int, name: str) -> random.Random:
    derived = int.from_bytes(hashlib.sha256(f"{seed}/{name}".encode()).digest(), "big")
    return random.Random(derived)  # noqa: S311


def draws(source: Any) -> list[Any]:
    """The same calls on the ``random`` module or on a generator."""
    items = list(range(8))
    source.shuffle(items)
    return [
        source.random(),
        source.uniform(1.0, 2.0),
        source.triangular(0.0, 1.0),
        source.randint(1, 10**6),
        source.randrange(0, 100, 7),
        source.choice("abcdef"),
        source.choices(range(10), k=4),
        source.sample(range(50), 3),
        items,
        source.gauss(0.0, 1.0),
        source.normalvariate(0.0, 1.0),
        source.lognormvariate(0.0, 1.0),
        source.expovariate(2.0),
        source.vonmisesvariate(1.0, 2.0),
        source.gammavariate(2.0, 1.0),
        source.betavariate(2.0, 3.0),
        source.paretovariate(3.0),
        source.weibullvariate(1.0, 2.0),
        source.getrandbits(70),
        source.randbytes(5),
    ]


def test_every_global_function_draws_from_the_run_reserved_stream() -> None:
    ctx = Still(11)
    before = random.getstate()
    with observing(ctx):
        served = draws(random)
    assert served == draws(stream(11, "ambient:random"))
    assert ctx.opened == [{"stream": "ambient:random"}]  # one stream, opened once
    assert random.getstate() == before  # the process's generator did not move


def test_seeding_inside_a_run_seeds_the_run_stream_only() -> None:
    before = random.getstate()
    with observing(Still(3)):
        random.seed(42)
        seeded = [random.random() for _ in range(3)]  # noqa: S311
        state = random.getstate()
    reference = random.Random(42)  # noqa: S311
    assert seeded == [reference.random() for _ in range(3)]
    assert state == reference.getstate()
    assert random.getstate() == before


def test_an_unvalued_seed_inside_a_run_comes_from_the_run_seed() -> None:
    def reseeded(seed: int) -> list[float]:
        with observing(Still(seed)):
            random.seed()
            return [random.random() for _ in range(3)]  # noqa: S311

    assert reseeded(8) == reseeded(8)
    assert reseeded(8) != reseeded(9)


def test_generated_ids_come_from_the_ids_stream() -> None:
    with observing(Still(4)):
        ids = [uuid.uuid4(), uuid.uuid4()]
        node = uuid.uuid1()
        kept = uuid.uuid1(node=0x123456789ABC, clock_seq=0x1234)
    expected = stream(4, "ambient:ids")
    assert ids == [uuid.UUID(int=expected.getrandbits(128), version=4) for _ in range(2)]
    assert [i.version for i in ids] == [4, 4] and node.version == 1
    assert node.variant == kept.variant == uuid.RFC_4122
    assert node.node & (1 << 40)  # multicast-marked: no card's address
    assert (kept.node, kept.clock_seq) == (0x123456789ABC, 0x1234)
    with observing(Still(4)):
        assert uuid.uuid4() == ids[0]  # the same run seed, the same ids


def test_the_clock_is_the_run_time_and_explicit_times_are_left_alone() -> None:
    stamp = MOMENT.timestamp()
    with observing(Still(1)):
        assert time.time() == stamp == time.time()
        assert time.time_ns() == 1772600767_890123_000
        assert time.gmtime()[:6] == (2026, 3, 4, 5, 6, 7)
        assert time.gmtime(None) == time.gmtime()
        assert time.localtime() == time.localtime(stamp)
        assert time.ctime() == time.ctime(stamp)
        assert time.asctime() == time.asctime(time.localtime(stamp))
        assert time.strftime("%Y-%m-%d") == time.strftime("%Y-%m-%d", time.localtime(stamp))
        # an explicit time is the caller's, not "now"
        assert time.gmtime(0)[:3] == (1970, 1, 1)
        assert time.ctime(0) == time.ctime(0.0)
        assert time.strftime("%Y", time.gmtime(0)) == "1970"
        # durations stay real
        start = time.monotonic()
        time.sleep(0.01)
        assert time.monotonic() > start
    assert abs(time.time() - stamp) > 3600


@pytest.mark.parametrize("name", ["ambient:random", "ambient:ids", "ambient:mine"])
def test_the_reserved_stream_names_are_refused_to_agents(name: str) -> None:
    ctx = Still(2)
    with pytest.raises(ValueError, match="reserved"):
        ctx.random(name)
    with observing(ctx):
        random.random()  # noqa: S311 - the interceptor may open it
        with pytest.raises(ValueError, match="reserved"):
            ctx.random(name)  # ... the agent still may not
    assert ctx.opened == [{"stream": "ambient:random"}]
