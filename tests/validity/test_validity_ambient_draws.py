"""Known-answer tests: the wall clock, the global ``random`` module and generated ids
that agent code reads directly are served from the run.

The truth of a counterfactual is the agent run LIVE through capture with the
intervention applied to the live response (``tests/agents/validity_draws_agents``), on
the same seed and the same wall clock; replay starts from the baseline specimen. A
replay that answers must agree with the truth; one that cannot know it must end
``unservable`` and name the read it could not serve.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, Tolerances, run_audit
from enclave.replay.disclosure import quantize, resolution_for
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import validity_draws_agents as da

RECORDED_SEED = 5
INPUTS = {"key": "K-7"}
LOW = {"lookup": {"value": 0.2}}
# the wall clock of every capture in a test that reads it: the truth's world is the
# recorded one but for the intervention
WALL = datetime.now(UTC).replace(microsecond=654321) - timedelta(minutes=3)


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(
    runtime: Runtime,
    agent: AgentSpec,
    *,
    seed: int = RECORDED_SEED,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Trajectory:
    """Run ``agent`` live (with ``overrides`` applied); the recorded trajectory."""
    with da.live(overrides=overrides):
        specimen = capture(runtime, agent, dict(INPUTS), tenant_id="acme", seed=seed).specimen_id
    return open_specimen(
        runtime, specimen, job_id="validity-draws", lease_seconds=60, now=now()
    ).trajectory


def truth(runtime: Runtime, agent: AgentSpec, seed: int) -> Mapping[str, Any]:
    """The counterfactual's outcome: the agent run live with the intervention applied."""
    return captured(runtime, agent, seed=seed, overrides=LOW).outcome


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="intervened", audit_time=now()
    )


def intervened(runtime: Runtime, trajectory: Trajectory, agent: AgentSpec) -> Trajectory:
    intervention = Intervention(
        Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
    )
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def agrees(run: RunResult, expected: Mapping[str, Any]) -> None:
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["score"] == expected["score"]
    assert run.layers["decision"] == expected["decision"]
    assert run.layers["proposal"] == expected["proposal"]


@pytest.fixture
def wall(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> datetime:
    monkeypatch.setattr(runtime, "clock", lambda: WALL)
    return WALL


# -- (a) global random only on the counterfactual path ---------------------------------


@pytest.mark.parametrize("seed", [RECORDED_SEED, 6, 7, 8])
def test_global_random_on_the_counterfactual_path_is_a_matched_draw(
    runtime: Runtime, seed: int
) -> None:
    agent = da.RANDOM_WHEN_LOW_AGENT
    recorded = captured(runtime, agent)
    assert recorded.outcome["decision"] == "HIGH" and "boost" not in recorded.outcome["proposal"]
    expected = truth(runtime, agent, seed)
    run = replayed(intervened(runtime, recorded, agent), agent, seed)
    agrees(run, expected)
    # the stream the record does not hold is opened from the sample's seed
    assert ("main/random#0", "substitute") in run.served


def test_the_counterfactual_draws_differ_by_seed(runtime: Runtime) -> None:
    # the draws are the seed's, not a constant: four seeds, four boosts
    agent = da.RANDOM_WHEN_LOW_AGENT
    recorded = intervened(runtime, captured(runtime, agent), agent)
    boosts = set()
    for seed in (5, 6, 7, 8):
        run = replayed(recorded, agent, seed)
        assert run.layers is not None
        boosts.add(run.layers["proposal"]["boost"])
    assert len(boosts) == 4


# -- (b) global random on every path -----------------------------------------------------


def test_the_baseline_at_the_recorded_seed_reproduces_the_capture(runtime: Runtime) -> None:
    agent = da.RANDOM_ALWAYS_AGENT
    recorded = captured(runtime, agent)
    run = replay_run(
        trajectory=recorded, agent=agent, seed=RECORDED_SEED, variant="baseline", audit_time=now()
    )
    agrees(run, recorded.outcome)
    assert run.served == (("main/lookup#0", "record"), ("main/random#0", "record"))


@pytest.mark.parametrize("seed", [RECORDED_SEED, 6, 7])
def test_global_random_on_every_path_agrees_with_the_truth(runtime: Runtime, seed: int) -> None:
    agent = da.RANDOM_ALWAYS_AGENT
    recorded = captured(runtime, agent)
    agrees(replayed(intervened(runtime, recorded, agent), agent, seed), truth(runtime, agent, seed))
    # the baseline arm on another seed is the live run on that seed
    baseline = replay_run(
        trajectory=recorded, agent=agent, seed=seed, variant="baseline", audit_time=now()
    )
    agrees(baseline, captured(runtime, agent, seed=seed).outcome)


def test_seeding_the_global_module_seeds_the_run_own_stream(runtime: Runtime) -> None:
    agent = da.RESEEDS_AGENT
    recorded = captured(runtime, agent)
    expected = random.Random(1234)  # noqa: S311
    fixed = [expected.random() for _ in range(3)]
    again = expected.random()
    assert recorded.outcome["proposal"]["fixed"] == fixed
    assert recorded.outcome["proposal"]["repeat"] == [again, again]
    for seed in (RECORDED_SEED, 6):
        agrees(
            replayed(intervened(runtime, recorded, agent), agent, seed), truth(runtime, agent, seed)
        )


def test_the_ambient_stream_names_are_reserved(runtime: Runtime) -> None:
    refused = captured(runtime, da.RESERVED_STREAM_AGENT).outcome["proposal"]["refused"]
    assert refused is not None and "reserved" in refused


# -- (c) the wall clock ------------------------------------------------------------------


@pytest.mark.parametrize("seed", [RECORDED_SEED, 6])
def test_the_clock_on_the_counterfactual_path_is_the_recorded_time(
    runtime: Runtime, wall: datetime, seed: int
) -> None:
    agent = da.CLOCK_WHEN_LOW_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, seed)
    reading = expected["proposal"]["clock"]
    assert reading["time"] == wall.timestamp()
    assert reading["time_ns"] == str(int(wall.timestamp()) * 10**9 + 654321000)
    assert reading["gmtime"] == list(wall.timetuple())[:6]
    run = replayed(intervened(runtime, recorded, agent), agent, seed)
    agrees(run, expected)
    assert run.served[0] == ("main/clock#0", "record")


def test_the_clock_the_record_does_not_hold_is_unservable(runtime: Runtime, wall: datetime) -> None:
    for agent in (da.UNRECORDED_CLOCK_AGENT, da.SWALLOWS_CLOCK_AGENT):
        recorded = captured(runtime, agent)
        run = replayed(intervened(runtime, recorded, agent), agent, RECORDED_SEED)
        assert (run.failure, run.layers) == ("unservable", None), agent.name
        assert run.served[-1] == ("main/clock#0", "unservable")


# -- (d) generated ids -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [RECORDED_SEED, 6, 7])
def test_generated_ids_on_the_decision_path_agree_with_the_truth(
    runtime: Runtime, seed: int
) -> None:
    agent = da.IDS_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, seed)
    ticket, node = (
        uuid.UUID(expected["proposal"]["ticket"]),
        uuid.UUID(expected["proposal"]["node"]),
    )
    assert (ticket.version, node.version) == (4, 1)
    assert ticket.variant == node.variant == uuid.RFC_4122
    agrees(replayed(intervened(runtime, recorded, agent), agent, seed), expected)
    baseline = replay_run(
        trajectory=recorded, agent=agent, seed=RECORDED_SEED, variant="baseline", audit_time=now()
    )
    agrees(baseline, recorded.outcome)


# -- (e) outside an observed run ----------------------------------------------------------


def test_outside_a_run_the_originals_answer(runtime: Runtime) -> None:
    captured(runtime, da.RANDOM_ALWAYS_AGENT)  # the interceptors are installed by now
    assert type(time.time).__name__ != "builtin_function_or_method"
    assert random.random.__name__ == "random"
    # the wall clock advances and is the system's
    first = time.time()
    time.sleep(0.02)
    second = time.time()
    assert second - first >= 0.015
    assert abs(time.time_ns() / 1e9 - time.clock_gettime(time.CLOCK_REALTIME)) < 1.0
    assert abs(time.mktime(time.localtime()) - time.time()) < 2.0
    # ids differ
    ids = {uuid.uuid4() for _ in range(5)}
    assert len(ids) == 5 and all(i.version == 4 for i in ids)
    # the global module is the process's: seeded here, it repeats a fresh generator
    random.seed(99)
    reference = random.Random(99)  # noqa: S311
    assert [random.random() for _ in range(3)] == [reference.random() for _ in range(3)]  # noqa: S311
    assert random.getstate() == reference.getstate()
    assert random.randint(1, 10**9) == reference.randint(1, 10**9)  # noqa: S311


# -- 5. threads --------------------------------------------------------------------------


def test_a_capture_in_one_thread_leaves_another_thread_alone(runtime: Runtime) -> None:
    results: list[Trajectory] = []
    da.inside.clear()
    da.release.clear()
    worker = threading.Thread(target=lambda: results.append(captured(runtime, da.WAITS_AGENT)))
    worker.start()
    try:
        assert da.inside.wait(30)
        random.seed(7)  # this thread is not in the run: the process's generator
        reference = random.Random(7)  # noqa: S311
        assert [random.random() for _ in range(3)] == [reference.random() for _ in range(3)]  # noqa: S311
        assert abs(time.time() - time.clock_gettime(time.CLOCK_REALTIME)) < 1.0
    finally:
        da.release.set()
        worker.join(60)
    (recorded,) = results
    stream = random.Random(_stream_seed(RECORDED_SEED, "ambient:random"))  # noqa: S311
    assert recorded.outcome["proposal"]["draws"] == [stream.random(), stream.random()]


def _stream_seed(seed: int, name: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(f"{seed}/{name}".encode()).digest(), "big")


# -- through the sandbox child -------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_an_audit_serves_global_random_in_the_sandbox_child(runtime: Runtime) -> None:
    """Every sample's global draws come from its seed in both arms: the baseline is
    reproduced and the effect is exactly the intervention's (live: 0.2 decides LOW)."""
    with da.live():
        specimen = capture(
            runtime, da.RANDOM_ALWAYS_AGENT, dict(INPUTS), tenant_id="acme", seed=RECORDED_SEED
        ).specimen_id
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
        ),
        purpose="validity review",
        requester="test",
        samples=4,
    )
    outcome = run_audit(runtime, request, now=now(), limits=SandboxLimits(wall_seconds=20.0))
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.classification == "influential"
    assert outcome.placebo is not None and outcome.placebo.passed is True
    assert outcome.effect is not None and outcome.effect.flip_rate == 1.0
    resolution = resolution_for(Tolerances().score)
    assert outcome.effect.mean_delta == quantize(0.2 - da.RECORDED_VALUE, resolution)
