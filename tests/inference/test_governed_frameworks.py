"""Governed inference for a framework agent, against the real model: the Agents SDK refund
desk of ``openai_agents_hosted_agent.py`` with its model captured at the wire (``WIRE``:
an ``OpenAIChatCompletionsModel`` whose client is on the wire adapter). An intervention on
the order service's answer changes the instructions the model reads, so the record holds
no answer for the next model call: without a grant the audit is ``unservable``; with one
the supervisor asks the server, pinned and counted, and the audit completes. The prompt's
canary stays sealed.
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
import openai_agents_hosted_agent as desk  # noqa: E402

CANARY = "CANARY-LLAMA-GOVERNED-FRAMEWORK-5c1e"
SEED = 3
LIMITS = SandboxLimits(wall_seconds=300.0)


@pytest.fixture(scope="module")
def specimen(runtime: Runtime, model_server: ModelServer) -> str:
    configure(runtime, model_server)
    inputs = {"input": f"Order A-1042 of {CANARY} never arrived."}
    return capture(runtime, desk.WIRE, inputs, tenant_id="acme", seed=SEED).specimen_id


def audit(runtime: Runtime, specimen: str, *grants: InferenceGrant) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/order-service#0", field="/delivered", value=True
        ),
        requester="test",
        samples=4,
        seed=1,
        purpose="did the carrier's answer cause the refund",
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
    calls = [s for s in trajectory.steps if s.kind == "model"]
    assert calls and all(s.call_id.startswith("main/refund-model#") for s in calls)
    first = calls[0]
    assert first.request["url"].endswith("/v1/chat/completions")
    assert first.request["body"]["json"]["model"] == desk.MODEL
    assert first.response["body"]["json"]["model"] == model_server.model
    assert trajectory.outcome["decision"] in {"REFUND", "DENY", "ESCALATE", "QUEUE"}


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
        boundary="refund-model",
        canary=CANARY,
    )
