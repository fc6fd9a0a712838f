"""The replay engine and the audit's fail-closed paths (DESIGN invariants 2-5, 8).

Specimens are real captures in a real SQLite home; audits run through ``run_audit`` in
an isolated worker unless the property is about the in-process engine itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import BadInput, Home, Refused, Runtime
from enclave.capture import AgentCrashed, capture, load_agent
from enclave.incidents import procurement
from enclave.replay import (
    AuditOutcome,
    AuditRequest,
    Intervention,
    Strategy,
    Tolerances,
    run_audit,
)
from enclave.replay.runs import apply_intervention, open_specimen, placebo_of, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import replay_agents as agents
from tests.support import cli_runner

REPLACE_VALUE = Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2)
LIMITS = SandboxLimits(wall_seconds=20.0)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def request(specimen: str, intervention: Intervention = REPLACE_VALUE, **kw: Any) -> AuditRequest:
    options: dict[str, Any] = {"samples": 4, "seed": 1, "purpose": "engine test", **kw}
    return AuditRequest(
        specimen_id=specimen, intervention=intervention, requester="test", **options
    )


def audit(
    runtime: Runtime, specimen: str, intervention: Intervention = REPLACE_VALUE, **kw: Any
) -> AuditOutcome:
    return run_audit(runtime, request(specimen, intervention, **kw), now=now(), limits=LIMITS)


def opened(runtime: Runtime, specimen: str) -> Any:
    return open_specimen(runtime, specimen, job_id="engine-test", lease_seconds=60, now=now())


def failed_reasons(runtime: Runtime, audit_id: str) -> list[str]:
    return [e.body["reason"] for e in runtime.ledger.entries(kind="audit.failed", subject=audit_id)]


def assert_failed(runtime: Runtime, outcome: AuditOutcome, reason: str) -> None:
    assert outcome.classification == "failed"
    assert outcome.failure == reason
    assert outcome.envelope is None and outcome.effect is None
    assert failed_reasons(runtime, outcome.audit_id) == [reason]
    assert not runtime.ledger.entries(kind="certificate.issued", subject=outcome.audit_id)


# -- 1. replay never calls live --------------------------------------------------------------


def test_replay_never_calls_live_in_process(runtime: Runtime) -> None:
    specimen = agents.capture_specimen(runtime, agents.UNSERVABLE_AGENT)
    assert agents.LIVE_CALLS[-2:] == ["lookup", "detail"]
    calls_before = len(agents.LIVE_CALLS)
    spec = opened(runtime, specimen)
    agent = load_agent(spec.record.agent_name)
    for seed in (5, 6, 7):  # the recorded seed, then seeds that depart at the random draw
        run = replay_run(
            trajectory=spec.trajectory, agent=agent, seed=seed, variant="baseline", audit_time=now()
        )
        assert run.failure is None, run.failure
        assert all(how == "record" for _, how in run.served)
    assert len(agents.LIVE_CALLS) == calls_before  # the guarded live functions were never reached


def test_audit_of_a_guarded_agent_succeeds_so_live_was_never_called(runtime: Runtime) -> None:
    # every live function of PLAIN_AGENT raises outside capture; a replay that called one
    # would end its run with agent_error and fail the audit
    outcome = audit(runtime, agents.capture_specimen(runtime, agents.PLAIN_AGENT))
    assert outcome.classification == "influential"
    assert outcome.failure is None and outcome.envelope is not None


# -- 2. divergence, unservable, unresolvable -----------------------------------------------


def test_divergence_before_departure_fails_the_audit(runtime: Runtime) -> None:
    specimen = agents.capture_specimen(runtime, agents.DIVERGENT_AGENT)
    spec = opened(runtime, specimen)
    run = replay_run(
        trajectory=spec.trajectory,
        agent=load_agent(spec.record.agent_name),
        seed=5,
        variant="baseline",
        audit_time=now(),
    )
    assert run.failure == "divergence" and run.layers is None
    # the intervention is on that very call, but the request differs before it is served
    intervention = Intervention(
        Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.1
    )
    outcome = audit(runtime, specimen, intervention)
    assert_failed(runtime, outcome, "divergence")
    assert outcome.failure_detail == "baseline run on the recorded seed"


def test_call_without_recording_or_substitute_after_departure_is_unservable(
    runtime: Runtime,
) -> None:
    specimen = agents.capture_specimen(runtime, agents.UNSERVABLE_AGENT)
    spec = opened(runtime, specimen)
    agent = load_agent(spec.record.agent_name)
    digester = runtime.digests.for_tenant(spec.record.tenant_id)
    applied = apply_intervention(spec.trajectory, REPLACE_VALUE, agent=agent, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory, agent=agent, seed=5, variant="intervened", audit_time=now()
    )
    assert run.failure == "unservable" and run.layers is None
    outcome = audit(runtime, specimen)
    assert_failed(runtime, outcome, "unservable")
    assert outcome.failure_detail is not None and outcome.failure_detail.startswith(
        "intervened run"
    )


@pytest.mark.parametrize(
    "agent", [agents.WITHHELD_AGENT, agents.WITHHELD_COPY_AGENT], ids=["index", "copy"]
)
def test_reading_a_withheld_field_is_unresolvable(runtime: Runtime, agent: Any) -> None:
    specimen = agents.capture_specimen(runtime, agent)
    spec = opened(runtime, specimen)
    run = replay_run(
        trajectory=spec.trajectory,
        agent=load_agent(spec.record.agent_name),
        seed=5,
        variant="baseline",
        audit_time=now(),
    )
    assert run.failure == "unresolvable"
    assert_failed(runtime, audit(runtime, specimen), "unresolvable")


@pytest.mark.parametrize(
    "agent",
    [
        agents.LEASE_AGENT,
        agents.LEASE_DICT_AGENT,
        agents.LEASE_ITEMS_AGENT,
        agents.LEASE_VALUES_AGENT,
    ],
    ids=["index", "dict-copy", "items", "values"],
)
def test_live_state_read_after_departure_makes_the_audit_observable_only(
    runtime: Runtime, agent: Any
) -> None:
    outcome = audit(runtime, agents.capture_specimen(runtime, agent))
    assert outcome.classification == "observable-only"
    assert outcome.auditability.live_state_fields == ("/lease_id",)
    assert outcome.auditability.first_unverifiable_step == "main/lease#0"
    assert outcome.effect is None


def test_agent_exception_text_is_not_reported(runtime: Runtime) -> None:
    outcome = audit(runtime, agents.capture_specimen(runtime, agents.RAISING_AGENT))
    assert_failed(runtime, outcome, "agent_error")
    assert agents.CANARY not in repr(outcome.to_dict())


# -- 3. an intervention changes exactly what it declares --------------------------------------


def test_apply_intervention_proves_the_rest_unchanged(runtime: Runtime) -> None:
    spec = opened(runtime, agents.capture_specimen(runtime, agents.PLAIN_AGENT))
    agent = load_agent(spec.record.agent_name)
    digester = runtime.digests.for_tenant(spec.record.tenant_id)
    applied = apply_intervention(spec.trajectory, REPLACE_VALUE, agent=agent, digester=digester)
    assert applied.unchanged_digest_before == applied.unchanged_digest_after
    assert applied.unchanged_digest_equal
    assert applied.actual_changes == applied.declared_changes == ("main/lookup#0#response/value",)
    assert applied.original_digest != applied.counterfactual_digest
    target = applied.trajectory.step_by_call("main/lookup#0")
    assert target.response["value"] == 0.2 and target.intervened
    assert (
        spec.trajectory.step_by_call("main/lookup#0").response["value"] == 0.8
    )  # the record is untouched
    placebo = placebo_of(spec.trajectory, applied)
    assert (
        placebo.step_by_call("main/lookup#0").response
        == spec.trajectory.step_by_call("main/lookup#0").response
    )
    # the unchanged digest is keyed: another tenant's key gives another digest
    other = apply_intervention(
        spec.trajectory,
        REPLACE_VALUE,
        agent=agent,
        digester=runtime.digests.for_tenant("other-tenant"),
    )
    assert other.unchanged_digest_before != applied.unchanged_digest_before


def test_revision_changes_only_the_identity(runtime: Runtime) -> None:
    inputs: dict[str, Any] = dict(procurement.BASELINE_INPUT["inputs"])  # type: ignore[call-overload]
    specimen = capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=41).specimen_id
    spec = opened(runtime, specimen)
    applied = apply_intervention(
        spec.trajectory,
        Intervention(Strategy.REVISION, revision=("model", "r2")),
        agent=procurement.AGENT,
        digester=runtime.digests.for_tenant("acme"),
    )
    assert applied.actual_changes == applied.declared_changes == ("main/decider#0#identity",)
    assert applied.unchanged_digest_equal


def test_an_intervention_that_touches_another_field_is_refused(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    real_replace = dataclasses.replace

    def sloppy(step: Any, **changes: Any) -> Any:
        if "response" in changes:  # also "tidies" a neighbouring field
            changes["response"] = {**changes["response"], "note": "tidied"}
        return real_replace(step, **changes)

    # white-box: the ``replace`` the intervention module calls (a target, not an import)
    monkeypatch.setattr("enclave.replay._interventions.replace", sloppy)
    spec = opened(runtime, specimen)
    with pytest.raises(Refused) as info:
        apply_intervention(
            spec.trajectory,
            REPLACE_VALUE,
            agent=load_agent(spec.record.agent_name),
            digester=runtime.digests.for_tenant("acme"),
        )
    assert info.value.code == "undeclared_change"
    with pytest.raises(Refused):
        run_audit(runtime, request(specimen), now=now(), audit_id="au-sloppy")
    assert failed_reasons(runtime, "au-sloppy") == ["undeclared_change"]
    assert not runtime.ledger.entries(kind="certificate.issued", subject="au-sloppy")


@pytest.mark.parametrize(
    ("intervention", "code"),
    [
        (
            Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=1.5),
            "out_of_bounds",
        ),
        (
            Intervention(Strategy.PERTURB, call_id="main/lookup#0", field="/note", delta=0.1),
            "strategy_not_applicable",
        ),
        (
            Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/memo", value="x"),
            "unresolvable",
        ),
        (
            Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.8),
            "no_change",
        ),
        (Intervention(Strategy.REVISION, revision=("model", "r9")), "unknown_revision"),
    ],
    ids=["out-of-bounds", "perturb-text", "withheld-target", "same-value", "unknown-revision"],
)
def test_invalid_interventions_are_refused_before_anything_runs(
    runtime: Runtime, intervention: Intervention, code: str
) -> None:
    specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    with pytest.raises(Refused) as info:
        run_audit(runtime, request(specimen, intervention), now=now(), audit_id=f"au-{code}")
    assert info.value.code == code
    assert failed_reasons(runtime, f"au-{code}") == [code]
    assert not (runtime.home.root / "scratch").exists() or not any(
        (runtime.home.root / "scratch").iterdir()
    )


# -- 4. no comparison without a reproduced baseline ------------------------------------------


def test_unreproducible_baseline_gives_no_effect(runtime: Runtime) -> None:
    outcome = audit(runtime, agents.capture_specimen(runtime, agents.UNSEEDED_AGENT))
    assert outcome.classification == "baseline-not-reproduced"
    assert outcome.effect is None and outcome.placebo is None
    assert outcome.envelope is not None
    import base64
    import json

    envelope = outcome.envelope
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["baseline"]["reproduced"] is False
    assert predicate["baseline"]["layers"]["score"]["ok"] is False
    assert predicate["effect"] is None
    assert predicate["not_established"][0].startswith("any effect of the intervention")
    assert not [c for c in predicate["lineage"] if c["kind"] == "replays"]  # no samples were run


def test_a_loose_tolerance_lets_the_gate_pass_but_the_apparatus_catches_the_noise(
    runtime: Runtime,
) -> None:
    outcome = audit(
        runtime,
        agents.capture_specimen(runtime, agents.UNSEEDED_AGENT),
        tolerances=Tolerances(score=0.05),
    )
    # unseeded noise differs on the second fresh worker before the placebo is compared;
    # either way the audit fails closed and certifies nothing
    assert_failed(runtime, outcome, "unstable")
    assert outcome.envelope is None and outcome.effect is None


# -- 5. refusals: erased, incomplete, unknown ---------------------------------------------------


def test_erased_specimen_is_unresolvable(runtime: Runtime) -> None:
    specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    runtime.ledger.mark_erased(specimen, erased_at=now().isoformat())
    assert runtime.payloads.erase("acme", specimen)
    with pytest.raises(Refused) as info:
        run_audit(runtime, request(specimen), now=now(), audit_id="au-erased")
    assert info.value.code == "unresolvable"
    assert failed_reasons(runtime, "au-erased") == ["unresolvable"]
    assert not runtime.ledger.entries(kind="grant.used", subject="au-erased")


def test_payload_erased_without_ledger_mark_is_unresolvable(runtime: Runtime) -> None:
    specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    runtime.payloads.erase("acme", specimen)
    with pytest.raises(Refused) as info:
        run_audit(runtime, request(specimen), now=now(), audit_id="au-shredded")
    assert info.value.code == "unresolvable"


def test_incomplete_run_is_refused(runtime: Runtime) -> None:
    with pytest.raises(AgentCrashed):
        agents.capture_specimen(runtime, agents.CRASHING_AGENT, specimen_id="sp-crashed-run")
    specimen = "sp-crashed-run"
    assert runtime.ledger.run_status(specimen).value == "incomplete"
    with pytest.raises(Refused) as info:
        run_audit(runtime, request(specimen), now=now(), audit_id="au-incomplete")
    assert info.value.code == "not_sealed"
    assert failed_reasons(runtime, "au-incomplete") == [info.value.code]


def test_unknown_specimen_is_refused(runtime: Runtime) -> None:
    with pytest.raises(Refused) as info:
        run_audit(runtime, request("sp-0000000000000000"), now=now())
    assert info.value.code == "unknown_specimen"


# -- 6. bad options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: Intervention(
            Strategy.PERTURB, call_id="main/lookup#0", field="/value", delta=float("nan")
        ),
        lambda: Intervention(Strategy.PERTURB, call_id="main/lookup#0", field="/value", delta=0.0),
        lambda: Intervention(Strategy.NULLIFY, call_id="main/lookup#0", field="value"),
        lambda: Intervention(Strategy.NULLIFY, call_id="main/lookup#0", field="/a/~2"),
        lambda: Intervention(Strategy.REVISION),
        lambda: request("sp-x", samples=1),
        lambda: request("sp-x", seed=-1),
        lambda: request("sp-x", purpose="  "),
        lambda: Tolerances.parse(["decision=ignore"]),
        lambda: Tolerances.parse(["score=lots"]),
        lambda: Tolerances(score=2.0),
    ],
)
def test_invalid_requests_cannot_be_built(build: Any) -> None:
    with pytest.raises(BadInput):
        build()


_cli = cli_runner.run_cli


@pytest.mark.parametrize(
    "args",
    [
        ["--strategy", "explode", "--call", "main/lookup#0", "--field", "/value"],
        ["--revision", "model"],
        ["--revision", "model=r2", "--strategy", "nullify"],
        ["--strategy", "replace", "--call", "main/lookup#0", "--field", "/value"],
        ["--strategy", "perturb", "--call", "main/lookup#0", "--field", "/value", "--delta", "nan"],
        ["--strategy", "nullify", "--call", "main/lookup#0", "--field", "/value", "--samples", "1"],
        [
            "--strategy",
            "nullify",
            "--call",
            "main/lookup#0",
            "--field",
            "/value",
            "--tolerance",
            "vibes",
        ],
        ["--strategy", "nullify", "--call", "main/nothing#0", "--field", "/value"],
        [],
    ],
    ids=[
        "strategy",
        "revision-form",
        "revision-and-strategy",
        "replace-no-value",
        "nan-delta",
        "samples",
        "tolerance",
        "unknown-call",
        "no-intervention",
    ],
)
def test_bad_cli_options_are_one_line_errors(runtime: Runtime, args: list[str]) -> None:
    specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    done = _cli(runtime.home.root, "audit", specimen, "--purpose", "cli check", *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout.strip() == ""


def test_authoritative_substitutes_are_boundary_names_kept_with_the_request() -> None:
    made = request("sp-1", authoritative_substitutes=("review-policy", "approval-policy"))
    assert made.authoritative_substitutes == ("approval-policy", "review-policy")  # sorted
    assert AuditRequest.from_dict(made.to_dict()) == made
    assert "authoritative_substitutes" not in request("sp-1").to_dict()
    for names in (("main/approval-policy#0",), ("a", "a"), ("",), ["approval-policy"]):
        with pytest.raises(BadInput):
            request("sp-1", authoritative_substitutes=names)
