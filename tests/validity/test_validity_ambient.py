"""Known-answer tests for ambient inputs: environment variables and data files an agent
reads without ``ctx``.

The truth of a counterfactual is the agent run LIVE through capture with the
intervention applied to the live response, in the world of the baseline capture (the
variable set, the file present), on the same seed. Replay starts from the baseline
specimen in a world where the variable is gone and the file is gone or changed — what a
sandbox looks like. A replay that answers must agree with the truth; a replay that needs
an input the record does not hold must abstain (``ambient_input``), never take the
"absent" branch and report an effect the world would not have shown.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import (
    AuditOutcome,
    AuditRequest,
    Intervention,
    Strategy,
    Tolerances,
    run_audit,
)
from enclave.replay.disclosure import quantize, resolution_for
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import validity_ambient_agents as aa
from tests.support.canary import find_canaries, scan_tree

SEED = 5
RECORDED = 0.9  # HIGH without the fallback
LOW = 0.2  # opens the fallback path


@pytest.fixture
def mode_file(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "mode.txt"
    path.parent.mkdir()
    path.write_text("lenient\n", encoding="utf-8")
    return path


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(
    runtime: Runtime, agent: AgentSpec, value: float, inputs: Mapping[str, Any]
) -> Trajectory:
    with aa.live(value):
        specimen = capture(runtime, agent, dict(inputs), tenant_id="acme", seed=SEED).specimen_id
    return open_specimen(
        runtime, specimen, job_id="validity-ambient", lease_seconds=60, now=now()
    ).trajectory


def intervened(runtime: Runtime, trajectory: Trajectory, agent: AgentSpec) -> Trajectory:
    intervention = Intervention(
        Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=LOW
    )
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=SEED, variant="intervened", audit_time=now()
    )


def lowered(runtime: Runtime, specimen: str) -> AuditOutcome:
    """An audit in the sandbox of the lookup lowered to ``LOW`` (four samples)."""
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=LOW
        ),
        purpose="validity review",
        requester="test",
        samples=4,
    )
    return run_audit(runtime, request, now=now(), limits=SandboxLimits(wall_seconds=20.0))


def ambient(trajectory: Trajectory) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        (s.name, dict(s.request), dict(s.response))
        for s in trajectory.steps
        if s.kind == StepKind.AMBIENT.value
    ]


def inputs_for(path: Path | None = None) -> dict[str, Any]:
    return {"key": "K-1", "path": "" if path is None else str(path)}


# -- (a) and (b): environment variables ---------------------------------------------------


def test_a_variable_read_only_on_the_counterfactual_path_abstains(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.ENV_ON_FALLBACK_AGENT
    monkeypatch.setenv(aa.VARIABLE, "lenient")  # production holds it
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    truth = captured(runtime, agent, LOW, inputs_for()).outcome
    assert truth["decision"] == recorded.outcome["decision"] == "HIGH"  # no influence
    monkeypatch.delenv(aa.VARIABLE)  # the sandbox does not hold it
    run = replayed(intervened(runtime, recorded, agent), agent)
    # not "LOW" (a flip the world would not show): the record does not hold the input
    assert run.layers is None, run.layers
    assert run.failure == "ambient_input"
    assert ("ambient:env", "unservable") in run.served


def test_a_variable_read_on_every_path_is_served_from_the_record(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.ENV_ALWAYS_AGENT
    monkeypatch.setenv(aa.VARIABLE, "lenient")
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    truth = captured(runtime, agent, LOW, inputs_for()).outcome
    listing, *steps = ambient(recorded)
    assert listing[:2] == ("ambient:environ", {}) and aa.VARIABLE in listing[2]["names"]
    assert steps == [("ambient:env", {"name": aa.VARIABLE}, {"value": "lenient"})]
    monkeypatch.setenv(aa.VARIABLE, "strict")  # the replay's own world says otherwise
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["decision"] == truth["decision"] == "HIGH"
    assert run.layers["score"] == pytest.approx(truth["score"])
    assert ("main/ambient:env#0", "record") in run.served


def test_a_variable_absent_at_capture_is_served_absent_where_the_run_reads_it_later(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cold replay reads optional settings a warm capture process had already read:
    # the capture's listing answers them when they did not exist then
    agent = aa.ENV_LAZY_ON_FALLBACK_AGENT
    monkeypatch.setenv(aa.VARIABLE, "lenient")
    monkeypatch.delenv(aa.LAZY_VARIABLE, raising=False)
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    truth = captured(runtime, agent, LOW, inputs_for()).outcome
    assert [name for name, _, _ in ambient(recorded)] == ["ambient:environ", "ambient:env"]
    monkeypatch.setenv(aa.LAZY_VARIABLE, "strict")  # the replay's own world says otherwise
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["decision"] == truth["decision"] == "HIGH"


def test_a_variable_present_at_capture_but_not_read_still_abstains(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.ENV_LAZY_ON_FALLBACK_AGENT
    monkeypatch.setenv(aa.VARIABLE, "strict")
    monkeypatch.setenv(aa.LAZY_VARIABLE, "lenient")  # listed at capture, its value unread
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.layers is None, run.layers
    assert run.failure == "ambient_input"


# -- (c): data files ----------------------------------------------------------------------


def test_a_file_read_only_on_the_counterfactual_path_abstains(
    runtime: Runtime, mode_file: Path
) -> None:
    agent = aa.FILE_ON_FALLBACK_AGENT
    recorded = captured(runtime, agent, RECORDED, inputs_for(mode_file))
    truth = captured(runtime, agent, LOW, inputs_for(mode_file)).outcome
    assert truth["decision"] == recorded.outcome["decision"] == "HIGH"
    mode_file.unlink()  # the sandbox does not hold it
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.layers is None, run.layers
    assert run.failure == "ambient_input"
    assert ("ambient:file", "unservable") in run.served


def test_a_file_read_on_every_path_is_served_from_the_record(
    runtime: Runtime, mode_file: Path
) -> None:
    agent = aa.FILE_ALWAYS_AGENT
    recorded = captured(runtime, agent, RECORDED, inputs_for(mode_file))
    truth = captured(runtime, agent, LOW, inputs_for(mode_file)).outcome
    steps = ambient(recorded)
    assert [(name, request) for name, request, _ in steps] == [
        ("ambient:file", {"path": str(mode_file)})
    ]  # read twice (text, then bytes), recorded once
    mode_file.write_text("strict\n", encoding="utf-8")  # the world changed since
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["decision"] == truth["decision"] == "HIGH"
    mode_file.unlink()
    assert replayed(intervened(runtime, recorded, agent), agent).layers == run.layers


# -- (d): credentials ---------------------------------------------------------------------


def test_a_credential_is_stored_nowhere_and_replays_as_a_placeholder(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from enclave.capture import CREDENTIAL_PLACEHOLDER

    agent = aa.CREDENTIAL_AGENT
    monkeypatch.setenv(aa.API_KEY, f"sk-{aa.CANARY}-api")
    monkeypatch.setenv(aa.DECLARED_CREDENTIAL, f"pem-{aa.CANARY}-declared")
    aa.SEEN.clear()
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    assert aa.SEEN == [f"sk-{aa.CANARY}-api", f"pem-{aa.CANARY}-declared"]  # live: the key
    listing, *steps = ambient(recorded)
    assert listing[0] == "ambient:environ" and aa.API_KEY in listing[2]["names"]
    assert steps == [
        ("ambient:credential", {"name": aa.API_KEY}, {"present": True}),
        ("ambient:credential", {"name": aa.DECLARED_CREDENTIAL}, {"present": True}),
    ]
    assert not find_canaries(repr(recorded).encode(), [aa.CANARY])  # decrypted: absent
    home = runtime.home.root
    assert scan_tree(home, [aa.CANARY]) == {}  # database, payload store, everything
    monkeypatch.delenv(aa.API_KEY)
    monkeypatch.delenv(aa.DECLARED_CREDENTIAL)
    aa.SEEN.clear()
    run = replayed(intervened(runtime, recorded, agent), agent)
    assert run.failure is None, run.failure
    assert aa.SEEN == [CREDENTIAL_PLACEHOLDER, CREDENTIAL_PLACEHOLDER]
    assert not find_canaries(repr(run).encode(), [aa.CANARY])


# -- (e): the run's own writes ------------------------------------------------------------


def test_a_variable_the_run_set_itself_is_not_an_input(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.OWN_WRITE_AGENT
    monkeypatch.delenv(aa.OWN_VARIABLE, raising=False)
    recorded = captured(runtime, agent, RECORDED, inputs_for())
    truth = captured(runtime, agent, LOW, inputs_for()).outcome
    monkeypatch.delenv(aa.OWN_VARIABLE)  # the capture really set it
    assert ambient(recorded) == []
    run = replayed(intervened(runtime, recorded, agent), agent)
    monkeypatch.delenv(aa.OWN_VARIABLE)  # and so did the replay (its sandbox confines it)
    assert run.failure is None, run.failure
    assert run.layers is not None and run.layers["decision"] == truth["decision"] == "HIGH"
    assert os.environ.get(aa.OWN_VARIABLE) is None


# -- through the real sandbox -------------------------------------------------------------


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_the_replay_child_serves_the_recorded_world_not_its_own(
    runtime: Runtime, mode_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.ENV_AND_FILE_AGENT
    monkeypatch.setenv(aa.VARIABLE, "lenient")
    monkeypatch.setenv("HOME", "/home/analyst")  # the sandbox's own is /scratch
    with aa.live(RECORDED):
        specimen = capture(
            runtime, agent, inputs_for(mode_file), tenant_id="acme", seed=SEED
        ).specimen_id
    truth = captured(runtime, agent, LOW, inputs_for(mode_file)).outcome
    assert truth["decision"] == "HIGH"  # live, the fallback keeps it HIGH: no flip
    mode_file.write_text("strict\n", encoding="utf-8")  # the world since: not the run's
    monkeypatch.delenv(aa.VARIABLE)
    outcome = lowered(runtime, specimen)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.effect is not None and outcome.effect.flip_rate == 0.0
    resolution = resolution_for(Tolerances().score)
    assert outcome.effect.mean_delta == quantize(truth["score"] - RECORDED, resolution)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_an_audit_whose_branch_reads_an_unrecorded_variable_fails_naming_it(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = aa.ENV_ON_FALLBACK_AGENT
    monkeypatch.setenv(aa.VARIABLE, "lenient")
    with aa.live(RECORDED):
        specimen = capture(runtime, agent, inputs_for(), tenant_id="acme", seed=SEED).specimen_id
    outcome = lowered(runtime, specimen)
    assert outcome.classification == "failed"
    assert outcome.failure == "ambient_input"
    assert outcome.failure_detail is not None and "ambient:env" in outcome.failure_detail


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_ambient_values_are_sealed_like_payload_fields(
    runtime: Runtime,
    mode_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = aa.ENV_AND_FILE_AGENT
    monkeypatch.setenv(aa.VARIABLE, f"lenient-{aa.CANARY}")
    monkeypatch.setenv("HOME", f"/home/{aa.CANARY}")
    mode_file.write_text(f"lenient {aa.CANARY}\n", encoding="utf-8")
    with aa.live(RECORDED):
        specimen = capture(
            runtime, agent, inputs_for(mode_file), tenant_id="acme", seed=SEED
        ).specimen_id
    recorded = open_specimen(
        runtime, specimen, job_id="validity-ambient", lease_seconds=60, now=now()
    ).trajectory
    # recorded (the enclave decrypts them) ...
    assert len(find_canaries(repr(ambient(recorded)).encode(), [aa.CANARY])) == 1
    outcome = lowered(runtime, specimen)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.envelope is not None
    # ... and found nowhere else: not in the certificate, the output, the database or
    # any file of the home (the payload store holds them as ciphertext)
    assert not find_canaries(json.dumps(outcome.envelope).encode(), [aa.CANARY])
    printed = capsys.readouterr()
    assert aa.CANARY not in printed.out + printed.err
    assert scan_tree(runtime.home.root, [aa.CANARY]) == {}
