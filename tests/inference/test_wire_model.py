"""The openai client at the wire (``enclave.adapters.http``) against a real model: the
same agent the wire tests run against a stand-in server, and the example agent, captured
against llama.cpp's server with SmolLM2-135M-Instruct and replayed from the record — 100
times in-process, and audited in the sandbox, where no network exists. A counterfactual
whose model request the record does not hold ends ``unservable`` naming the model call;
one the model never reads is ``equivalent``; sealed content stays sealed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import http_agents as ha
from tests.inference.conftest import ModelServer, assert_sealed, audit_time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import openai_client_agent  # noqa: E402

SEED = 5
LIMITS = SandboxLimits(wall_seconds=120.0)
AGENTS = {"http-agent": ha.HTTP_AGENT, "example": openai_client_agent.AGENT}


def captured(runtime: Runtime, agent: AgentSpec, server: ModelServer) -> tuple[str, Trajectory]:
    inputs = {"applicant": "A-7", "base_url": server.url}
    with ha.serve_model():  # the risk tool's live answer (its model server is not asked)
        specimen = capture(runtime, agent, inputs, tenant_id="acme", seed=SEED).specimen_id
    opened = open_specimen(runtime, specimen, job_id="wire", lease_seconds=60, now=audit_time())
    return specimen, opened.trajectory


def model_steps(trajectory: Trajectory) -> list[Any]:
    return [s for s in trajectory.steps if s.kind == "model"]


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_real_model_s_answers_replay_from_the_record_100_times(
    runtime: Runtime, model_server: ModelServer, name: str
) -> None:
    agent = AGENTS[name]
    _, trajectory = captured(runtime, agent, model_server)
    (model_call,) = model_steps(trajectory)
    # the real server answered: its own model identity, its own words
    assert model_call.response["status"] == 200
    assert model_call.response["body"]["json"]["model"] == model_server.model
    asked = model_server.prompt_tokens()
    for _ in range(100):
        run = replay_run(
            trajectory=trajectory, agent=agent, seed=SEED, variant="b", audit_time=audit_time()
        )
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert (model_call.call_id, "record") in run.served
    assert model_server.prompt_tokens() == asked  # never asked again


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_model_request_the_record_lacks_is_unservable(
    runtime: Runtime, model_server: ModelServer, name: str
) -> None:
    agent = AGENTS[name]
    _, trajectory = captured(runtime, agent, model_server)
    (model_call,) = model_steps(trajectory)
    intervention = Intervention(Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2)
    digester = runtime.digests.for_tenant("acme")
    applied = apply_intervention(trajectory, intervention, agent=agent, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory, agent=agent, seed=SEED, variant="i", audit_time=audit_time()
    )
    assert run.failure == "unservable", run.failure
    assert (model_call.call_id, "unservable") in run.served


def audit(runtime: Runtime, specimen: str, field: str, value: Any, samples: int) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/risk#0", field=field, value=value
        ),
        requester="test",
        samples=samples,
        seed=1,
        purpose="a real model at the wire",
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


def test_in_the_sandbox_a_counterfactual_is_unservable_and_an_unread_answer_equivalent(
    runtime: Runtime, model_server: ModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    specimen, _ = captured(runtime, ha.HTTP_AGENT, model_server)
    asked_again = audit(runtime, specimen, "/risk", 0.2, samples=5)
    assert asked_again.classification == "failed" and asked_again.failure == "unservable"
    assert asked_again.envelope is None
    unread = audit(runtime, specimen, "/note", "x" * len(ha.CANARY), samples=100)
    assert unread.failure is None, unread.failure
    assert unread.classification == "equivalent"
    assert unread.envelope is not None
    assert_sealed(runtime, unread.envelope, capsys, ha.CANARY)
