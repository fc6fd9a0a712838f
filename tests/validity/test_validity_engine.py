"""Known-answer tests for the replay engine: what replay serves is the world the
counterfactual would have met, or the run abstains.

The truth of a counterfactual is computed by running the agent LIVE through capture
with the intervention applied to the live response (``tests/agents/validity_engine_agents``),
on the same seed; replay starts from the baseline specimen. A replay that answers must
agree with the truth; one that cannot know it must end ``unservable``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, BoundarySpec, capture, policy
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import (
    RunResult,
    Trajectory,
    apply_intervention,
    open_specimen,
    placebo_of,
    replay_run,
)
from enclave.replay.worker import check_substitutes
from ledger import StepKind
from tests.agents import validity_engine_agents as va

RECORDED_SEED = 5
INPUTS = {"key": "K-7", "path": ""}


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(
    runtime: Runtime,
    agent: AgentSpec,
    *,
    seed: int = RECORDED_SEED,
    inputs: Mapping[str, Any] = INPUTS,
    **world: Any,
) -> Trajectory:
    """Run ``agent`` live in a world built from ``world``; the recorded trajectory."""
    with va.live(**world):
        specimen = capture(runtime, agent, dict(inputs), tenant_id="acme", seed=seed).specimen_id
    return open_specimen(
        runtime, specimen, job_id="validity-engine", lease_seconds=60, now=now()
    ).trajectory


def truth(runtime: Runtime, agent: AgentSpec, seed: int, **world: Any) -> Mapping[str, Any]:
    """The counterfactual's outcome: the agent run live with the intervention applied."""
    return captured(runtime, agent, seed=seed, **world).outcome


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int, **options: Any) -> RunResult:
    return replay_run(
        trajectory=trajectory,
        agent=agent,
        seed=seed,
        variant="intervened",
        audit_time=now(),
        **options,
    )


def revised(trajectory: Trajectory, call_name: str, identity: str) -> Trajectory:
    """A revision swap as the intervention contract states it: every recorded step of the
    revision point's call is served by the substitute with the new identity."""
    steps = tuple(
        replace(s, intervened=True, serve_by_substitute=True, resolved=identity)
        if s.name == call_name
        else s
        for s in trajectory.steps
    )
    return replace(trajectory, steps=steps)


def replaced(
    runtime: Runtime, trajectory: Trajectory, agent: AgentSpec, value: float
) -> Trajectory:
    intervention = Intervention(
        Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=value
    )
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def agrees(run: RunResult, expected: Mapping[str, Any]) -> None:
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["score"] == pytest.approx(expected["score"], abs=1e-12)
    assert run.layers["decision"] == expected["decision"]
    assert run.layers["proposal"] == expected["proposal"]


# -- 1. revision swaps cover every call of the revision point ----------------------------


@pytest.mark.parametrize("seed", [RECORDED_SEED, 6, 7])
def test_a_second_decisive_call_to_the_revised_model_is_swapped(
    runtime: Runtime, seed: int
) -> None:
    agent = va.TWICE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, seed, revision="r2")
    assert expected["decision"] != recorded.outcome["decision"]  # the swap matters
    run = replayed(revised(recorded, "oracle", "r2"), agent, seed)
    agrees(run, expected)
    oracle = [how for call, how in run.served if call.startswith("main/oracle#")]
    assert oracle == ["intervention", "intervention"]


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_a_revision_after_a_random_draw_on_another_seed_is_swapped(
    runtime: Runtime, seed: int
) -> None:
    # the draw on a non-recorded seed departs first; the model call comes after it
    agent = va.RANDOM_FIRST_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, seed, revision="r2")
    run = replayed(revised(recorded, "oracle", "r2"), agent, seed)
    agrees(run, expected)


@pytest.mark.parametrize(
    ("agent", "seed"), [(va.TWICE_BARE_AGENT, 5), (va.RANDOM_FIRST_BARE_AGENT, 6)]
)
def test_a_step_to_substitute_without_a_substitute_is_unservable(
    runtime: Runtime, agent: AgentSpec, seed: int
) -> None:
    recorded = captured(runtime, agent)
    run = replayed(revised(recorded, "oracle", "r2"), agent, seed)
    assert run.failure == "unservable" and run.layers is None


@pytest.mark.parametrize("agent", [va.TWICE_AGENT, va.RANDOM_FIRST_AGENT], ids=["twice", "draw"])
@pytest.mark.parametrize("seed", [RECORDED_SEED, 6])
def test_the_revision_intervention_and_its_placebo_agree_with_the_truth(
    runtime: Runtime, agent: AgentSpec, seed: int
) -> None:
    recorded = captured(runtime, agent)
    applied = apply_intervention(
        recorded,
        Intervention(Strategy.REVISION, revision=("model", "r2")),
        agent=agent,
        digester=runtime.digests.for_tenant("acme"),
    )
    agrees(replayed(applied.trajectory, agent, seed), truth(runtime, agent, seed, revision="r2"))
    # the placebo swaps every call to its own identity: the live r1 world
    placebo = replayed(placebo_of(recorded, applied), agent, seed)
    agrees(placebo, truth(runtime, agent, seed, revision="r1"))


# -- 2. a readback is served from the record only if the world it reads is the recorded one


def test_a_readback_after_a_skipped_effect_is_not_served_stale(runtime: Runtime) -> None:
    agent = va.SKIPS_WRITE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, overrides={"lookup": {"value": 0.2}})
    assert expected["decision"] == "LOW" and recorded.outcome["decision"] == "HIGH"
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    # no readback substitute: the engine cannot know the unwritten store, so it abstains
    assert run.failure == "unservable", run.layers


def test_a_readback_after_an_identical_effect_is_served_from_the_record(
    runtime: Runtime,
) -> None:
    agent = va.SKIPS_WRITE_AGENT
    recorded = captured(runtime, agent)
    for seed in (RECORDED_SEED, 6):
        expected = truth(runtime, agent, seed, overrides={"lookup": {"value": 0.9}})
        run = replayed(replaced(runtime, recorded, agent, 0.9), agent, seed)
        agrees(run, expected)
        assert ("main/get_limit#0", "record") in run.served
        assert run.unserved_effects == ()


def test_a_readback_is_matched_to_the_recording_taken_in_the_same_world(
    runtime: Runtime,
) -> None:
    # recorded: read (10), write, read (90); the counterfactual skips the first read: its
    # one read, after the same write, is the record's second
    agent = va.READS_AROUND_WRITE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, overrides={"lookup": {"value": 0.9}})
    run = replayed(replaced(runtime, recorded, agent, 0.9), agent, RECORDED_SEED)
    agrees(run, expected)
    assert ("main/get_limit#1", "record") in run.served  # served: the recorded call ids
    assert run.unused == ("main/get_limit#0",)


def test_an_effect_served_by_its_substitute_is_not_served_from_the_effect_store(
    runtime: Runtime,
) -> None:
    agent = va.CHANGES_WRITE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, overrides={"lookup": {"value": 0.2}})
    assert expected["score"] < 0.3 < recorded.outcome["score"]
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    assert "main/set_limit#0" in run.unserved_effects  # the branch is observable-only
    assert ("main/set_limit#0", "substitute") in run.served
    assert run.failure == "unservable", run.layers  # and its readback is not the record's


def test_a_readback_substitute_serves_a_changed_world(runtime: Runtime) -> None:
    agent = va.SKIPS_WRITE_STORE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, overrides={"lookup": {"value": 0.2}})
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    agrees(run, expected)
    assert ("main/get_limit#0", "substitute") in run.served


# -- 2b. a readback after a changed effect fails closed by default ----------------------

NO_FLAG = Intervention(Strategy.NULLIFY, call_id="main/fraud_flag#0", field="/flagged")
BY_SMS = Intervention(Strategy.REPLACE, call_id="main/fraud_flag#0", field="/channel", value="sms")


def intervened(
    runtime: Runtime, trajectory: Trajectory, agent: AgentSpec, intervention: Intervention
) -> Trajectory:
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def test_a_readback_without_reads_after_is_not_served_stale_after_a_skipped_effect(
    runtime: Runtime,
) -> None:
    # the flag froze the account; nullified, nothing freezes and the live readback would
    # say active. The readback declares no reads_after: it still reads the world.
    agent = va.FREEZE_AGENT
    recorded = captured(runtime, agent)
    assert recorded.outcome["proposal"]["state"] == "frozen"
    for seed in (RECORDED_SEED, 6):
        expected = truth(runtime, agent, seed, overrides={"fraud_flag": {"flagged": False}})
        assert expected["proposal"]["state"] == "active"
        assert expected["decision"] != recorded.outcome["decision"]  # the truth flips
        run = replayed(intervened(runtime, recorded, agent, NO_FLAG), agent, seed)
        # no readback substitute: the engine cannot know the unfrozen account, it abstains
        assert run.failure == "unservable", run.layers
        assert run.served[-1] == ("main/account_state#0", "unservable")
        assert ("main/limits_table#0", "record") in run.served  # the declared opt-out
        assert "main/freeze_account#0" in run.unused


def test_a_readback_substitute_answers_the_unfrozen_account(runtime: Runtime) -> None:
    agent = va.FREEZE_STORE_AGENT
    recorded = captured(runtime, agent)
    for seed in (RECORDED_SEED, 6):
        expected = truth(runtime, agent, seed, overrides={"fraud_flag": {"flagged": False}})
        run = replayed(intervened(runtime, recorded, agent, NO_FLAG), agent, seed)
        agrees(run, expected)
        assert ("main/account_state#0", "substitute") in run.served


def test_reads_after_narrows_a_readback_to_the_effects_it_reads(runtime: Runtime) -> None:
    # the notification goes by another channel (a changed effect, served by its dry-run
    # substitute); the freeze is as recorded. Narrowed to the freeze, the readback is
    # served from the record and agrees with the truth; by default it fails closed.
    narrowed = va.FREEZE_NARROWED_AGENT
    recorded = captured(runtime, narrowed)
    expected = truth(runtime, narrowed, RECORDED_SEED, overrides={"fraud_flag": {"channel": "sms"}})
    assert expected["proposal"]["state"] == "frozen"
    run = replayed(intervened(runtime, recorded, narrowed, BY_SMS), narrowed, RECORDED_SEED)
    agrees(run, expected)
    assert ("main/account_state#0", "record") in run.served
    assert run.unserved_effects == ("main/notify#0",)
    default = va.FREEZE_AGENT
    recorded = captured(runtime, default)
    run = replayed(intervened(runtime, recorded, default, BY_SMS), default, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/account_state#0", "unservable")
    # narrowed to the freeze, a skipped freeze still fails closed
    recorded = captured(runtime, narrowed)
    run = replayed(intervened(runtime, recorded, narrowed, NO_FLAG), narrowed, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/account_state#0", "unservable")


def test_an_effect_independent_boundary_is_served_from_the_record_after_a_skipped_effect(
    runtime: Runtime,
) -> None:
    agent = va.FREEZE_STORE_AGENT
    assert va.LIMITS.effect_independent and va.LIMITS.kind is StepKind.READBACK
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, overrides={"fraud_flag": {"flagged": False}})
    run = replayed(intervened(runtime, recorded, agent, NO_FLAG), agent, RECORDED_SEED)
    agrees(run, expected)
    assert run.layers is not None and run.layers["proposal"]["limit"] == 250
    assert ("main/limits_table#0", "record") in run.served
    # the same table without the opt-out is a readback like any other: it fails closed
    reads = va.FREEZE_TABLE_READS_WORLD_AGENT
    recorded = captured(runtime, reads)
    run = replayed(intervened(runtime, recorded, reads, NO_FLAG), reads, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/limits_table#0", "unservable")


@pytest.mark.parametrize(
    "agent", [va.FREEZE_AGENT, va.FREEZE_NARROWED_AGENT], ids=["default", "narrowed"]
)
def test_a_readback_after_the_recorded_effects_reproduces(
    runtime: Runtime, agent: AgentSpec
) -> None:
    recorded = captured(runtime, agent)
    for seed in (RECORDED_SEED, 6):
        run = replayed(recorded, agent, seed)
        agrees(run, truth(runtime, agent, seed))
        assert all(how == "record" for _, how in run.served), run.served
        assert run.unused == () and run.unserved_effects == ()


def test_a_tool_that_reads_the_world_may_declare_it(runtime: Runtime) -> None:
    # the account state read through a TOOL: served from the record unless declared
    tool = replace(va.ACCOUNT, kind=StepKind.TOOL)
    stale = va._freeze_agent("FREEZE_AGENT", tool)
    recorded = captured(runtime, stale)
    run = replayed(intervened(runtime, recorded, stale, NO_FLAG), stale, RECORDED_SEED)
    assert run.layers is not None and run.layers["proposal"]["state"] == "frozen"
    declared = va._freeze_agent("FREEZE_AGENT", replace(tool, reads_world=True))
    run = replayed(intervened(runtime, recorded, declared, NO_FLAG), declared, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/account_state#0", "unservable")


@pytest.mark.slow
def test_an_audit_of_the_nullified_flag_does_not_conclude_equivalent(runtime: Runtime) -> None:
    # the truth: nullifying the flag flips the decision on every seed
    agent = va.FREEZE_AGENT
    recorded = captured(runtime, agent)
    for seed in (1, 50, 100):
        expected = truth(runtime, agent, seed, overrides={"fraud_flag": {"flagged": False}})
        assert expected["decision"] != recorded.outcome["decision"]
    with va.live():
        specimen = capture(runtime, agent, dict(INPUTS), tenant_id="acme", seed=RECORDED_SEED)
    n = 100
    request = AuditRequest(
        specimen_id=specimen.specimen_id,
        intervention=NO_FLAG,
        purpose="validity review",
        requester="test",
        samples=n,
        seed=1,
    )
    outcome = run_audit(runtime, request, now=now())
    # no declared substitute knows the unfrozen account: no certificate, no partial
    # result, an abstention naming its reason and the call it could not serve
    assert outcome.classification == "failed", outcome.to_dict()
    assert outcome.failure == "unservable"
    assert outcome.failure_detail == "intervened run on seed 1: main/account_state#0 unservable"
    assert outcome.envelope is None and outcome.effect is None
    failed = runtime.ledger.entries(kind="audit.failed", subject=outcome.audit_id)
    assert [(e.body["reason"], e.body["detail"]) for e in failed] == [
        ("unservable", outcome.failure_detail)
    ]


@pytest.mark.parametrize(
    ("options", "reads_world"),
    [
        ({}, True),
        ({"effect_independent": True}, False),
        ({"kind": StepKind.TOOL}, False),
        ({"kind": StepKind.TOOL, "reads_world": True}, True),
        ({"kind": StepKind.TOOL, "reads_after": ("freeze_account",)}, True),
    ],
    ids=["readback", "opted-out", "tool", "tool-declared", "tool-reads-after"],
)
def test_which_boundaries_read_the_world(options: dict[str, Any], reads_world: bool) -> None:
    assert replace(va.ACCOUNT, **options).reads_effects is reads_world


@pytest.mark.parametrize(
    "options",
    [
        {"effect_independent": True, "reads_after": ("freeze_account",)},
        {"effect_independent": True, "reads_world": True},
        {"effect_independent": 1},
        {"reads_world": "yes"},
    ],
    ids=["with-reads-after", "with-reads-world", "not-a-bool", "reads-world-not-a-bool"],
)
def test_effect_independence_is_declared_plainly(options: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError), match="effect_independent|reads_world"):
        replace(va.ACCOUNT, **options)


@pytest.mark.parametrize(
    "build",
    [
        lambda: replace(va.GET_LIMIT, reads_after="set_limit"),
        lambda: replace(va.GET_LIMIT, reads_after=("",)),
        lambda: replace(va.SKIPS_WRITE_AGENT, boundaries=(va.LOOKUP, va.GET_LIMIT)),
        lambda: replace(
            va.SKIPS_WRITE_AGENT,
            boundaries=(va.LOOKUP, va.SET_LIMIT, replace(va.GET_LIMIT, reads_after=("lookup",))),
        ),
    ],
    ids=["not-a-tuple", "empty-name", "undeclared", "not-an-effect"],
)
def test_reads_after_names_declared_effects(build: Any) -> None:
    with pytest.raises(ValueError, match="reads_after"):
        build()


# -- 3. a substitute must reproduce the record before it may serve -------------------------


def test_a_stale_substitute_is_found_unfaithful_and_cannot_manufacture_an_effect(
    runtime: Runtime,
) -> None:
    agent = va.STALE_SUBSTITUTE_AGENT
    recorded = captured(runtime, agent)
    expected = truth(runtime, agent, RECORDED_SEED, revision="r2")
    assert expected["score"] == recorded.outcome["score"]  # r2 is r1 redeployed: no effect
    intervened = revised(recorded, "scorer", "r2")
    unchecked = replayed(intervened, agent, RECORDED_SEED)
    assert unchecked.layers is not None  # the substitute's stale table answers ...
    assert unchecked.layers["decision"] != expected["decision"]  # ... a manufactured flip
    fidelity = check_substitutes(agent, recorded, score_tolerance=1e-9)
    assert fidelity == {"scorer": {"checked": 1, "faithful": False}}
    unfaithful = frozenset(n for n, f in fidelity.items() if not f["faithful"])
    run = replayed(intervened, agent, RECORDED_SEED, unfaithful=unfaithful)
    assert run.failure == "unservable" and run.layers is None
    baseline = replayed(recorded, agent, RECORDED_SEED, unfaithful=unfaithful)
    agrees(baseline, recorded.outcome)  # the record still serves


def test_an_unfaithful_substitute_does_not_serve_calls_the_record_lacks(
    runtime: Runtime,
) -> None:
    agent = va.CHANGES_WRITE_AGENT
    recorded = captured(runtime, agent)
    intervened = replaced(runtime, recorded, agent, 0.2)
    run = replayed(intervened, agent, RECORDED_SEED, unfaithful=frozenset({"set_limit"}))
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/set_limit#0", "unservable")
    assert run.unserved_effects == ("main/set_limit#0",)


def test_a_faithful_substitute_passes_and_withheld_fields_are_not_compared(
    runtime: Runtime,
) -> None:
    recorded = captured(runtime, va.TWICE_AGENT)
    assert recorded.step_by_call("main/oracle#0").response["trace"] == {"$hole": "withheld"}
    assert check_substitutes(va.TWICE_AGENT, recorded, score_tolerance=0.0) == {
        "oracle": {"checked": 2, "faithful": True}
    }


def _with_oracle(substitute: Any) -> AgentSpec:
    return replace(va.TWICE_AGENT, boundaries=(replace(va.ORACLE, substitute=substitute),))


def _raises(exc: BaseException) -> Any:
    def substitute(request: Mapping[str, Any], resolved: str | None) -> Mapping[str, Any]:
        raise exc

    return substitute


@pytest.mark.parametrize(
    ("substitute", "tolerance", "faithful"),
    [
        (lambda q, r: {"bias": va.oracle_table(q, r)["bias"] + 1e-6}, 1e-5, True),
        (lambda q, r: {"bias": va.oracle_table(q, r)["bias"] + 1e-6}, 1e-9, False),
        (lambda q, r: {"bias": float("nan")}, 1.0, False),
        (lambda q, r: {"bias": True}, 1.0, False),
        (lambda q, r: {**va.oracle_table(q, r), "extra": 1}, 1.0, False),
        (lambda q, r: {}, 1.0, False),
        (lambda q, r: [("bias", 0.1)], 1.0, False),
        (lambda q, r: {"bias": str(va.oracle_table(q, r)["bias"])}, 1.0, False),
        (_raises(KeyError("prompt")), 1.0, False),
        (_raises(SystemExit(3)), 1.0, False),
        (_raises(KeyboardInterrupt()), 1.0, False),
    ],
    ids=[
        "within-tolerance",
        "beyond-tolerance",
        "nan",
        "bool-for-number",
        "extra-field",
        "missing-field",
        "not-a-mapping",
        "text-for-number",
        "raises-keyerror",
        "raises-systemexit",
        "raises-keyboardinterrupt",
    ],
)
def test_substitute_fidelity_rules(
    runtime: Runtime, substitute: Any, tolerance: float, faithful: bool
) -> None:
    recorded = captured(runtime, va.TWICE_AGENT)
    result = check_substitutes(_with_oracle(substitute), recorded, score_tolerance=tolerance)
    assert result == {"oracle": {"checked": 2, "faithful": faithful}}


def test_a_request_withheld_at_capture_cannot_be_checked(runtime: Runtime) -> None:
    recorded = captured(runtime, va.TWICE_AGENT)
    steps = tuple(
        replace(s, request={"prompt": {"$hole": "withheld"}}) if s.name == "oracle" else s
        for s in recorded.steps
    )
    result = check_substitutes(va.TWICE_AGENT, replace(recorded, steps=steps), score_tolerance=1)
    assert result == {"oracle": {"checked": 2, "faithful": False}}


def test_boundaries_without_substitute_or_calls_are_not_listed(runtime: Runtime) -> None:
    recorded = captured(runtime, va.SKIPS_WRITE_AGENT, overrides={"lookup": {"value": 0.2}})
    # set_limit declares a substitute but this run never wrote; get_limit declares none
    assert check_substitutes(va.SKIPS_WRITE_AGENT, recorded, score_tolerance=0.0) == {}


# -- 4. how each call was served, and which recorded calls were never used --------------


def test_served_and_unused_account_for_every_recorded_call(runtime: Runtime) -> None:
    agent = va.SKIPS_WRITE_AGENT
    recorded = captured(runtime, agent)
    baseline = replayed(recorded, agent, RECORDED_SEED)
    assert baseline.served == (
        ("main/lookup#0", "record"),
        ("main/set_limit#0", "record"),
        ("main/get_limit#0", "record"),
        ("main/random#0", "record"),
    )
    assert baseline.unused == ()
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    assert run.served == (("main/lookup#0", "intervention"), ("main/get_limit#0", "unservable"))
    assert run.unused == ("main/set_limit#0", "main/random#0")


def test_an_unservable_call_is_marked_before_the_run_ends(runtime: Runtime) -> None:
    bare = va.RANDOM_FIRST_BARE_AGENT
    recorded = captured(runtime, bare)
    run = replayed(recorded, bare, 6)  # departs at the draw; the oracle request still matches
    assert run.failure is None
    steps = tuple(
        replace(s, request={"prompt": "other"}) if s.name == "oracle" else s for s in recorded.steps
    )
    run = replayed(replace(recorded, steps=steps), bare, 6)
    assert run.failure == "unservable"
    assert run.served == (("main/random#0", "record"), ("main/oracle#0", "unservable"))
    assert run.unused == ("main/oracle#0",)


def test_a_substitute_that_raises_leaves_an_unservable_mark(runtime: Runtime) -> None:
    agent = va.RAISING_ORACLE_AGENT
    recorded = captured(runtime, agent)
    run = replayed(revised(recorded, "oracle", "r2"), agent, RECORDED_SEED)
    assert run.failure == "agent_error" and run.failure_detail == "KeyError"
    assert run.served == (("main/oracle#0", "unservable"),)
    assert run.unused == ("main/oracle#1", "main/random#0")


# -- 5. randomness: one stream per run, named sub-streams ----------------------------------


def _stream(seed: int, name: str) -> random.Random:
    derived = int.from_bytes(hashlib.sha256(f"{seed}/{name}".encode()).digest(), "big")
    return random.Random(derived)  # noqa: S311 - test arithmetic


def _expected_draws(seed: int) -> dict[str, Any]:
    main, noise = random.Random(seed), _stream(seed, "noise")  # noqa: S311
    first, second = main.random(), main.random()
    return {
        "draws": [first, second],
        "noise": [noise.random(), noise.random()],
        "same_object": True,
        "score": min(1.0, max(0.0, 0.5 + (first - second) / 10)),
    }


def test_draws_continue_one_stream_and_named_streams_are_derived(runtime: Runtime) -> None:
    recorded = captured(runtime, va.DRAWS_AGENT)
    expected = _expected_draws(RECORDED_SEED)
    proposal = recorded.outcome["proposal"]
    assert proposal["draws"] == expected["draws"] and expected["draws"][0] != expected["draws"][1]
    assert proposal["noise"] == expected["noise"] and proposal["same_object"] is True
    # one random step per stream creation
    randoms = [s for s in recorded.steps if s.kind == StepKind.RANDOM.value]
    assert [dict(s.request) for s in randoms] == [{}, {"stream": "noise"}]
    for seed in (RECORDED_SEED, 9):
        run = replayed(recorded, va.DRAWS_AGENT, seed)
        assert run.failure is None and run.layers is not None
        want = _expected_draws(seed)
        assert run.layers["proposal"]["draws"] == want["draws"]
        assert run.layers["proposal"]["noise"] == want["noise"]
        assert run.layers["proposal"]["same_object"] is True
        assert run.layers["score"] == pytest.approx(want["score"], abs=1e-12)
        assert run.unused == ()


def test_a_stream_name_must_be_a_non_empty_string(runtime: Runtime) -> None:
    def bad(ctx: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
        ctx.random("")
        return {}

    recorded = captured(runtime, va.DRAWS_AGENT)
    run = replayed(recorded, replace(va.DRAWS_AGENT, function=bad), RECORDED_SEED)
    assert run.failure == "agent_error" and run.failure_detail == "ValueError"


# -- 6. configuration and files an agent reads are part of the specimen ----------------------


def test_env_and_file_are_recorded_and_replayed_from_the_record(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "limits.cfg"
    config.write_bytes(f"limit=high {va.CANARY}-file".encode())
    monkeypatch.setenv(va.ENV_NAME, "eu-west")
    inputs = {"key": "K-7", "path": str(config)}
    recorded = captured(runtime, va.CONFIG_AGENT, inputs=inputs)
    assert recorded.outcome["decision"] == "HIGH"
    assert recorded.outcome["proposal"]["region"] == "eu-west"
    # the host changes after capture: replay must not see it
    monkeypatch.setenv(va.ENV_NAME, "us-east")
    config.write_bytes(b"limit=low")
    for seed in (RECORDED_SEED, 6):
        run = replayed(recorded, va.CONFIG_AGENT, seed)
        agrees(run, recorded.outcome)
        assert [c for c, _ in run.served if "/env#" in c or "/read#" in c] == [
            "main/env#0",
            "main/read#0",
        ]
    config.unlink()
    agrees(replayed(recorded, va.CONFIG_AGENT, RECORDED_SEED), recorded.outcome)


def test_env_and_file_steps_are_confidential_and_sealed(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "limits.cfg"
    config.write_bytes(f"limit=high {va.CANARY}-file".encode())
    monkeypatch.setenv(va.ENV_NAME, f"eu-west {va.CANARY}-env")
    with va.live():
        result = capture(
            runtime, va.CONFIG_AGENT, {"key": "K-7", "path": str(config)}, tenant_id="acme", seed=5
        )
    manifest = runtime.ledger.get_specimen(result.specimen_id).manifest
    steps = {s["name"]: s for s in manifest["steps"]}
    for name in ("env", "read"):
        assert steps[name]["kind"] == StepKind.TOOL.value
        assert {f["classification"] for f in steps[name]["fields"]} == {"confidential"}
        assert {f["retention"] for f in steps[name]["fields"]} == {"encrypted"}
    assert va.CANARY not in json.dumps(manifest)


def test_a_missing_file_is_recorded_as_missing(runtime: Runtime, tmp_path: Path) -> None:
    def reads_missing(ctx: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
        try:
            ctx.read(str(inputs["path"]))
        except FileNotFoundError:
            return va._outcome(0.2, region=None, size=-1)
        return va._outcome(0.8, region=None, size=0)

    agent = replace(va.CONFIG_AGENT, function=reads_missing)
    path = tmp_path / "absent.cfg"
    recorded = captured(runtime, agent, inputs={"key": "K-7", "path": str(path)})
    assert recorded.outcome["proposal"]["size"] == -1
    path.write_bytes(b"now it exists")
    agrees(replayed(recorded, agent, RECORDED_SEED), recorded.outcome)


def test_a_changed_variable_name_after_departure_is_unservable(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(va.ENV_NAME, "eu-west")
    agent = va.ENV_BY_VALUE_AGENT
    recorded = captured(runtime, agent)
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/env#0", "unservable")


def test_a_changed_path_after_departure_is_unservable(runtime: Runtime, tmp_path: Path) -> None:
    config = tmp_path / "limits.cfg"
    config.write_bytes(b"limit=high")
    (tmp_path / "limits.cfg.fallback").write_bytes(b"limit=low")
    agent = va.PATH_BY_VALUE_AGENT
    recorded = captured(runtime, agent, inputs={"key": "K-7", "path": str(config)})
    assert recorded.outcome["decision"] == "HIGH"
    run = replayed(replaced(runtime, recorded, agent, 0.2), agent, RECORDED_SEED)
    assert run.failure == "unservable"
    assert run.served[-1] == ("main/read#0", "unservable")
    assert run.unused == ("main/read#0",)


@pytest.mark.parametrize("name", ["env", "read"])
def test_env_and_read_are_reserved_boundary_names(name: str) -> None:
    tool = BoundarySpec(
        kind=StepKind.TOOL, name=name, request={}, response={"v": policy("internal")}
    )
    with pytest.raises(ValueError, match="reserved"):
        replace(va.CONFIG_AGENT, boundaries=(tool,))
