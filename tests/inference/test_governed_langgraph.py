"""Governed inference for a LangGraph agent, against the real model: the loan screener of
``langgraph_hosted_agent.py`` with its model captured at the wire (``WIRE``: a graph
built per run whose ``ChatOpenAI`` has the run's wire clients). An intervention on the
credit report's risk changes the prompt the model reads, so the record holds no answer
for the model's call: without a grant the audit is ``unservable`` and the server is not
asked; with one the supervisor asks it, pinned and counted, and the audit completes. The
application's canary stays sealed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import capture
from enclave.replay import AuditRequest, InferenceGrant, Intervention, Strategy, run_audit
from enclave.sandbox import SandboxLimits
from tests.inference.conftest import ModelServer, audit_time
from tests.inference.test_governed_inference import assert_governed, configure

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import langgraph_hosted_agent as screener  # noqa: E402

CANARY = "CANARY-LLAMA-GOVERNED-LANGGRAPH-7d2b"
SEED = 3
LIMITS = SandboxLimits(wall_seconds=300.0)


@pytest.fixture(scope="module")
def specimen(runtime: Runtime, model_server: ModelServer) -> str:
    configure(runtime, model_server)
    inputs = {"input": f"Applicant {CANARY} asks for a loan of 12000."}
    return capture(runtime, screener.WIRE, inputs, tenant_id="acme", seed=SEED).specimen_id


def audit(runtime: Runtime, specimen: str, *grants: InferenceGrant) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        # the risk the model reads in its prompt: a lower one is a prompt the record lacks
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/credit_check#0", field="/output/risk", value=0.1
        ),
        requester="test",
        samples=4,
        seed=1,
        purpose="did the credit report's risk cause the verdict",
        inference=grants,
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


def test_the_wire_form_records_each_exchange_with_the_model(
    runtime: Runtime, specimen: str, model_server: ModelServer
) -> None:
    from enclave.replay.runs import open_specimen

    trajectory = open_specimen(
        runtime, specimen, job_id="wire", lease_seconds=60, now=audit_time()
    ).trajectory
    assert [s.call_id for s in trajectory.steps if s.kind == "tool"] == ["main/credit_check#0"]
    (call,) = [s for s in trajectory.steps if s.kind == "model"]
    assert call.call_id == "main/screening-model#0"
    assert call.request["method"] == "POST"
    assert call.request["url"].endswith("/v1/chat/completions")
    body = call.request["body"]["json"]
    assert body["model"] == screener.MODEL
    assert "risk 0.7" in body["messages"][-1]["content"]  # the report, read by the model
    assert call.response["body"]["json"]["model"] == model_server.model
    assert trajectory.outcome["decision"] in {"APPROVE", "REJECT", "UNDECIDED"}


def test_a_tool_result_intervention_completes_with_live_answers_pinned_and_counted(
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
        boundary="screening-model",
        canary=CANARY,
    )
