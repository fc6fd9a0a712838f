"""Every replayed run starts from the same state, in the same controlled world.

Each agent in ``tests/agents/validity_isolation_agents.py`` has a causal answer known by
construction (the agent run live with the intervention applied). Its audit must report
that answer although the agent keeps module-level state, leaves files in scratch, reads
the process environment or iterates a set; an agent whose result depends on which
worker process ran it must be caught by the repeat on a second worker (``unstable``);
and a plain fork from inside a run is still killed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec
from enclave.jobs import audit_status, run_worker, submit_audit
from enclave.replay import AuditOutcome, AuditRequest, Intervention, Strategy, Tolerances, run_audit
from enclave.replay.disclosure import quantize, resolution_for
from enclave.replay.reply import FAILURE_REASONS
from enclave.replay.stages import repeat_seeds
from enclave.sandbox import Sandbox, SandboxLimits
from tests.agents import replay_agents
from tests.agents import validity_isolation_agents as agents

REPO = Path(__file__).resolve().parents[2]
LIMITS = SandboxLimits(wall_seconds=20.0)
LOW_VALUE = 0.2  # recorded 0.8 (HIGH); 0.2 decides LOW
SAMPLES = 4

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def request_for(runtime: Runtime, agent: AgentSpec, value: float = LOW_VALUE) -> AuditRequest:
    """An audit of a fresh capture of ``agent`` with its lookup's value replaced."""
    return AuditRequest(
        specimen_id=replay_agents.capture_specimen(runtime, agent),
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=value
        ),
        purpose="validity review",
        requester="test",
        samples=SAMPLES,
    )


def audit(runtime: Runtime, agent: AgentSpec, value: float = LOW_VALUE) -> AuditOutcome:
    request = request_for(runtime, agent, value)
    return run_audit(runtime, request, now=datetime.now(UTC) + timedelta(minutes=5), limits=LIMITS)


def assert_truth(outcome: AuditOutcome, *, flips: bool, delta: float) -> None:
    """The live answer: every seed flips (or none does), by exactly ``delta``."""
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.placebo is not None and outcome.placebo.passed is True
    assert outcome.effect is not None
    assert outcome.effect.flip_rate == (1.0 if flips else 0.0)
    resolution = resolution_for(Tolerances().score)
    assert outcome.effect.mean_delta == quantize(delta, resolution)


# -- module-level state ---------------------------------------------------------------


def test_memo_does_not_hide_a_real_effect(runtime: Runtime) -> None:
    """A shared process serves the intervened run the baseline's memoised answer: a
    missed effect. Live, 0.2 decides LOW on every seed."""
    outcome = audit(runtime, agents.MEMO_AGENT)
    assert outcome.classification == "influential"
    assert_truth(outcome, flips=True, delta=LOW_VALUE - agents.RECORDED_VALUE)


def test_counter_does_not_invent_an_effect(runtime: Runtime) -> None:
    """A shared process makes every run after the first decide otherwise: a false
    effect (or a placebo failure). Live, 0.75 is still HIGH."""
    outcome = audit(runtime, agents.COUNTER_AGENT, value=0.75)
    assert outcome.classification == "influential"  # |delta| 0.05 > the tolerance
    assert_truth(outcome, flips=False, delta=0.75 - agents.RECORDED_VALUE)


def test_scratch_left_by_one_run_is_gone_for_the_next(runtime: Runtime) -> None:
    outcome = audit(runtime, agents.SCRATCH_AGENT)
    assert_truth(outcome, flips=True, delta=LOW_VALUE - agents.RECORDED_VALUE)


# -- a controlled world ----------------------------------------------------------------


def _index_under_hash_seed_zero() -> int:
    code = (
        "from tests.agents.validity_isolation_agents import set_order_index; "
        "print(set_order_index())"
    )
    env = {"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_set_order_is_the_same_in_every_arm_and_worker(runtime: Runtime) -> None:
    """Only the intervened branch iterates a set: with a fixed hash seed it sees the
    same order in every run, in the repeat worker too, and in a fresh interpreter with
    that seed."""
    outcome = audit(runtime, agents.SET_ORDER_AGENT)
    offset = 0.05 * _index_under_hash_seed_zero()
    assert_truth(
        outcome,
        flips=LOW_VALUE + offset < agents.THRESHOLD,
        delta=LOW_VALUE + offset - agents.RECORDED_VALUE,
    )


def test_supervisor_environment_does_not_reach_a_run(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(agents.PROBE_VARIABLE, "set in the supervisor")
    outcome = audit(runtime, agents.ENVIRONMENT_AGENT)
    # the variable was set when the specimen was captured but never read there: the
    # world the branch would have met is unknown, so it abstains — neither the
    # supervisor's value nor the sandbox's absence stands in for it
    assert outcome.failure == "ambient_input", outcome.failure
    assert outcome.failure_detail is not None and "ambient:env" in outcome.failure_detail


def test_worker_environment_is_fixed_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(agents.PROBE_VARIABLE, "set in the supervisor")
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=LIMITS)
    with sandbox.start("tests.agents.validity_isolation_agents:read_environment") as worker:
        seen = worker.call({})
    assert seen == {
        "env": {"HOME": "/scratch", "TMPDIR": "/scratch", "PWD": "/scratch",
                "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"},
        "hash_seed": 0,
    }  # fmt: skip
    env = sandbox.environment
    assert env["run_state"] == "fork-per-run"
    assert env["hash_seed"] == 0
    assert env["process_environment"] == ["HOME", "LC_ALL", "PWD", "PYTHONHASHSEED", "TMPDIR"]
    assert "fresh_process_per_run" in env["layers_in_force"]


@pytest.mark.parametrize("isolation", ["bwrap", "UNSAFE_development"])
def test_each_call_starts_from_the_template(tmp_path: Path, isolation: str) -> None:
    """Module state and scratch files (even an unreadable directory) do not survive
    from one call to the next."""
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=LIMITS, isolation=isolation)
    with sandbox.start("tests.agents.validity_isolation_agents:count_calls") as worker:
        assert [worker.call({}) for _ in range(3)] == [{"runs": 1}] * 3
    with sandbox.start("tests.agents.validity_isolation_agents:scratch_note") as worker:
        assert [worker.call({}) for _ in range(2)] == [{"found": []}] * 2


# -- a second worker ---------------------------------------------------------------------


def test_result_that_depends_on_the_worker_process_is_unstable(runtime: Runtime) -> None:
    outcome = audit(runtime, agents.ADDRESS_AGENT)
    assert (outcome.classification, outcome.failure) == ("failed", "unstable")
    assert outcome.failure_detail == "a sample came out otherwise on a second fresh worker"
    assert outcome.envelope is None
    assert "unstable" in FAILURE_REASONS


def test_a_durable_batch_repeats_on_a_worker_of_another_zygote(runtime: Runtime) -> None:
    """The service's path: a job's workers are forked from its thread's zygotes. Two
    workers of one zygote share its address layout, so the repeat must come from another
    (or start fresh), or a sample that depends on the process would pass as stable."""
    request = request_for(runtime, agents.ADDRESS_AGENT)
    status = submit_audit(runtime, request, tenant_id="acme", now=datetime.now(UTC))
    stats = run_worker(
        lambda: Runtime.open(runtime.home, env={}),
        worker_id="validity",
        stop=threading.Event(),
        once=True,
        limits=LIMITS,
    )
    assert stats.done == 3  # prepare, the batch, finalize
    final = audit_status(runtime, status.audit_id)
    assert (final.status, final.classification, final.failure_code) == (
        "FAILED",
        None,
        "unstable",
    )
    assert not final.has_certificate


def test_repeat_seeds_are_a_deterministic_five_percent() -> None:
    assert repeat_seeds([7]) == [7]
    assert repeat_seeds(list(range(1, 21))) == [1]
    seeds = list(range(100, 300))
    chosen = repeat_seeds(seeds)
    assert len(chosen) == 10 and chosen == repeat_seeds(seeds)
    assert set(chosen) <= set(seeds) and chosen[0] == 100 and chosen[-1] == 280
    assert repeat_seeds([]) == []


# -- process creation --------------------------------------------------------------------


def test_plain_fork_inside_a_run_is_still_killed(runtime: Runtime) -> None:
    outcome = audit(runtime, agents.FORK_AGENT)
    assert (outcome.classification, outcome.failure) == ("failed", "forbidden_operation")
    assert outcome.envelope is None
