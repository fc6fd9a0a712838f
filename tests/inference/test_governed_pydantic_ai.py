"""Governed inference for a pydantic-ai agent, against the real model: the router of
``pydantic_ai_hosted_agent.py`` with its model captured at the wire (``WIRE``: an
``OpenAIChatModel`` whose client is on the wire adapter, made for each run). Its
instructions read the customer's account; an intervention on that answer changes what
the model is asked, so the record holds no answer for the model's call: without a grant
the audit is ``unservable``; with one the supervisor asks the server, pinned and
counted, and the audit completes. The prompt's canary stays sealed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import capture
from enclave.replay import AuditRequest, InferenceGrant, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import Trajectory, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.inference.conftest import ModelServer, audit_time
from tests.inference.test_governed_inference import assert_governed, configure

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import pydantic_ai_hosted_agent as router  # noqa: E402

CANARY = "CANARY-LLAMA-GOVERNED-PYDANTIC-AI-83d2"
SEED = 3
LIMITS = SandboxLimits(wall_seconds=300.0)
MODEL_CALL = "main/router-model#0"


@pytest.fixture(scope="module")
def specimen(runtime: Runtime, model_server: ModelServer) -> str:
    configure(runtime, model_server)
    inputs = {"input": f"My blender arrived broken, I want a refund. {CANARY}"}
    return capture(runtime, router.WIRE, inputs, tenant_id="acme", seed=SEED).specimen_id


def opened(runtime: Runtime, specimen: str) -> Trajectory:
    return open_specimen(
        runtime, specimen, job_id="wire", lease_seconds=60, now=audit_time()
    ).trajectory


def audit(runtime: Runtime, specimen: str, *grants: InferenceGrant) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE,
            call_id="main/customer-account#0",
            field="/open_complaints",
            value=0,
        ),
        requester="test",
        samples=4,
        seed=1,
        purpose="did the customer's account cause the escalation",
        inference=grants,
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


def test_the_wire_form_records_each_exchange_with_the_model(
    runtime: Runtime, specimen: str, model_server: ModelServer
) -> None:
    trajectory = opened(runtime, specimen)
    calls = [s for s in trajectory.steps if s.kind == "model"]
    assert [s.call_id for s in calls] == [MODEL_CALL]
    (exchange,) = calls
    assert exchange.request["method"] == "POST"
    assert exchange.request["url"].endswith("/v1/chat/completions")
    body = exchange.request["body"]["json"]
    assert body["model"] == router.MODEL
    # the account's answer is in what the model was asked
    assert any("open complaints" in str(m.get("content")) for m in body["messages"])
    assert exchange.response["body"]["json"]["model"] == model_server.model
    assert trajectory.outcome["decision"] in {"ESCALATE", "QUEUE"}
    # replayed from the record, the server asked nothing
    asked = model_server.prompt_tokens()
    run = replay_run(
        trajectory=trajectory, agent=router.WIRE, seed=SEED, variant="b", audit_time=audit_time()
    )
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    assert (MODEL_CALL, "record") in run.served
    assert model_server.prompt_tokens() == asked


def test_an_account_intervention_completes_with_live_answers_pinned_and_counted(
    runtime: Runtime,
    specimen: str,
    model_server: ModelServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert_governed(
        model_server,
        capsys,
        runtime,
        lambda *grants: audit(runtime, specimen, *grants),
        boundary="router-model",
        canary=CANARY,
    )
