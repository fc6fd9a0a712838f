"""A batch's seeds on every core: split into shards, each replayed by a fresh worker of
its own at once, the batch must come out exactly as one worker replays it — the same
samples, in seed order — and a failure in any shard fails the whole batch, with no
sample of the others kept."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import capture
from enclave.incidents import procurement
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.replay.stages import MIN_SHARD_SEEDS, run_sample_batch, split_seeds
from enclave.sandbox import Sandbox, SandboxLimits
from tests.agents import validity_isolation_agents as isolation
from tests.agents.replay_agents import capture_specimen

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
NOW = datetime.now(UTC) + timedelta(minutes=5)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    opened = Runtime.open(Home.init(tmp_path_factory.mktemp("shards") / "home"))
    yield opened
    opened.close()


def revision(specimen: str, samples: int) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="shards",
        requester="test",
        samples=samples,
        seed=1,
    )


def test_split_seeds_keeps_order_and_a_minimum_per_shard() -> None:
    seeds = list(range(7, 7 + 5 * MIN_SHARD_SEEDS + 3))
    parts = split_seeds(seeds, 3)
    assert [s for part in parts for s in part] == seeds
    assert len(parts) == 3 and max(map(len, parts)) - min(map(len, parts)) <= 1
    assert split_seeds(seeds[: 2 * MIN_SHARD_SEEDS - 1], 4) == [seeds[: 2 * MIN_SHARD_SEEDS - 1]]
    assert len(split_seeds(seeds, None)) >= 1


def test_a_batch_in_shards_comes_out_as_one_worker_replays_it(runtime: Runtime) -> None:
    inputs = dict(procurement.BASELINE_INPUT["inputs"])  # type: ignore[call-overload]
    specimen = capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=41).specimen_id
    request = revision(specimen, 2 * MIN_SHARD_SEEDS)
    seeds = list(range(1, 2 * MIN_SHARD_SEEDS + 1))
    done: list[int] = []
    batches = [
        run_sample_batch(
            runtime,
            request,
            audit_id="au-shards",
            job_id=f"shards-{count}",
            seeds=seeds,
            now=NOW,
            shards=count,
            progress=done.append,
        )
        for count in (1, 2)
    ]
    one, two = batches
    assert one.failure is None and two.failure is None
    assert [s.seed for s in two.samples] == seeds
    assert two.samples == one.samples
    assert sum(done) == 2 * len(seeds)  # every sample counted once per batch


def test_every_shard_s_worker_has_the_whole_cpu_budget(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the budget is a worker's, and every worker pays its template's start (a framework's
    # import, seconds of CPU for some) before its first run: a shard given only its seeds'
    # share of the budget ran out where one worker did not, so how the seeds were split
    # decided the audit's outcome
    started: list[int] = []
    start = Sandbox.start

    def recorded(self: Sandbox, handler: str, *, preload: tuple[str, ...] = ()) -> Any:
        started.append(self.limits.cpu_seconds)
        return start(self, handler, preload=preload)

    monkeypatch.setattr(Sandbox, "start", recorded)
    inputs = dict(procurement.BASELINE_INPUT["inputs"])  # type: ignore[call-overload]
    specimen = capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=42).specimen_id
    batch = run_sample_batch(
        runtime,
        revision(specimen, 2 * MIN_SHARD_SEEDS),
        audit_id="au-shards-budget",
        job_id="shards-budget",
        seeds=list(range(1, 2 * MIN_SHARD_SEEDS + 1)),
        now=NOW,
        shards=2,
        limits=SandboxLimits(cpu_seconds=60),
    )
    assert batch.failure is None
    assert len(started) == 3 and set(started) == {60}  # two shards and the repeat worker


def test_a_shard_s_failure_fails_the_batch_and_keeps_no_sample(runtime: Runtime) -> None:
    # forks from inside a run: every run of every shard is killed
    specimen = capture_specimen(runtime, isolation.FORK_AGENT)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
        ),
        purpose="shards",
        requester="test",
        samples=2 * MIN_SHARD_SEEDS,
    )
    batch = run_sample_batch(
        runtime,
        request,
        audit_id="au-shards-fail",
        job_id="shards-fail",
        seeds=list(range(1, 2 * MIN_SHARD_SEEDS + 1)),
        now=NOW,
        shards=2,
        limits=SandboxLimits(wall_seconds=20.0),
    )
    assert batch.failure == "forbidden_operation"
    assert batch.samples == ()
