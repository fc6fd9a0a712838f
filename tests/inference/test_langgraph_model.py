"""A LangGraph agent on a hosted ``ChatOpenAI`` against a real model: the example's hosted
form (``examples/langgraph_hosted_agent.py``) captured against llama.cpp's server with
SmolLM2-135M-Instruct, replayed from the record without asking it again, and audited in
the sandbox (the model's answer replaced by the other verdict); the prompt's canary stays
sealed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from enclave import Runtime
from enclave.capture import capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.inference.conftest import ModelServer, assert_sealed, audit_time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import langgraph_hosted_agent  # noqa: E402

CANARY = "CANARY-LLAMA-LANGGRAPH-5c81d0"
AGENT = langgraph_hosted_agent.HOSTED
SEED = 3


@pytest.fixture(scope="module")
def specimen(runtime: Runtime, model_server: ModelServer) -> str:
    inputs = {"input": f"Applicant {CANARY} has a risk of 0.7. Approve or reject?"}
    return capture(runtime, AGENT, inputs, tenant_id="acme", seed=SEED).specimen_id


def test_the_model_s_answer_replays_from_the_record_without_asking_it(
    runtime: Runtime, model_server: ModelServer, specimen: str
) -> None:
    opened = open_specimen(runtime, specimen, job_id="lg", lease_seconds=60, now=audit_time())
    trajectory = opened.trajectory
    (model_call,) = [s for s in trajectory.steps if s.kind == "model"]
    assert model_call.call_id == "main/screener#0"
    # the real model's verdict, whichever it is: the server holds the answer to the schema
    assert trajectory.outcome["decision"] in {"APPROVE", "REJECT"}
    asked = model_server.prompt_tokens()
    for _ in range(20):
        run = replay_run(
            trajectory=trajectory, agent=AGENT, seed=SEED, variant="b", audit_time=audit_time()
        )
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert (model_call.call_id, "record") in run.served
    assert model_server.prompt_tokens() == asked


def test_an_audit_of_the_model_s_answer_in_the_sandbox(
    runtime: Runtime, specimen: str, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = open_specimen(runtime, specimen, job_id="lg", lease_seconds=60, now=audit_time())
    other = "APPROVE" if opened.trajectory.outcome["decision"] == "REJECT" else "REJECT"
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE,
            call_id="main/screener#0",
            field="/message/kwargs/content",
            value=json.dumps({"decision": other}),
        ),
        requester="test",
        samples=20,
        seed=1,
        purpose="does the model's answer decide?",
    )
    outcome = run_audit(
        runtime, request, now=audit_time(), limits=SandboxLimits(wall_seconds=120.0)
    )
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == "influential"
    assert outcome.envelope is not None
    assert_sealed(runtime, outcome.envelope, capsys, CANARY)
