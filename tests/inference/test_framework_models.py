"""Framework agents on a hosted model, against a real model: the examples' hosted forms
(``openai_agents_hosted_agent.py``, ``pydantic_ai_hosted_agent.py``) —
an Agents SDK agent on ``OpenAIChatCompletionsModel`` and a pydantic-ai agent on
``OpenAIChatModel`` — captured against llama.cpp's server with SmolLM2-135M-Instruct at
the framework's model interface, replayed from the record without asking the server
again, and audited in the sandbox: the model's typed answer intervened on is
``influential``; an order-service answer that changes the model's next request ends
``unservable``, naming the model call (no answer for it exists until governed inference);
the prompt's canary stays sealed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.inference.conftest import ModelServer, assert_sealed, audit_time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import openai_agents_hosted_agent  # noqa: E402
import pydantic_ai_hosted_agent  # noqa: E402

CANARY = "CANARY-LLAMA-FRAMEWORK-0d93a7"
SEED = 3
LIMITS = SandboxLimits(wall_seconds=120.0)
OTHER = {"REFUND": "DENY", "DENY": "REFUND", "ESCALATE": "QUEUE", "QUEUE": "ESCALATE"}


@dataclass(frozen=True)
class Case:
    agent: AgentSpec
    prompt: str
    model_call: str
    model_name: Any  # where the model's identity sits in the recorded answer

    def verdict(self, decision: str) -> tuple[str, Any]:
        """An intervention on the model's typed answer: its field and the other verdict."""
        if self.agent is openai_agents_hosted_agent.HOSTED:
            return "/output/0/content/0/text/decision", OTHER[decision]
        return "/calls/final_result/decision", OTHER[decision]


CASES = {
    "openai-agents": Case(
        openai_agents_hosted_agent.HOSTED,
        f"Order A-1042 of {CANARY} never arrived.",
        "main/refund-model#0",
        lambda answer: answer["output"]["0"]["provider_data"]["model"],
    ),
    "pydantic-ai": Case(
        pydantic_ai_hosted_agent.HOSTED,
        f"My blender arrived broken, I want a refund. {CANARY}",
        "main/router-model#0",
        lambda answer: answer["message"]["model_name"],
    ),
}


@pytest.fixture(scope="module")
def specimens(runtime: Runtime, model_server: ModelServer) -> dict[str, str]:
    return {
        name: capture(
            runtime, case.agent, {"input": case.prompt}, tenant_id="acme", seed=SEED
        ).specimen_id
        for name, case in CASES.items()
    }


def opened(runtime: Runtime, specimen: str) -> Trajectory:
    return open_specimen(
        runtime, specimen, job_id="fw", lease_seconds=60, now=audit_time()
    ).trajectory


def audit(runtime: Runtime, specimen: str, call: str, field: str, value: Any, n: int) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REPLACE, call_id=call, field=field, value=value),
        requester="test",
        samples=n,
        seed=1,
        purpose="a framework agent on a real model",
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_model_s_answers_replay_from_the_record_without_asking_it(
    runtime: Runtime, model_server: ModelServer, specimens: dict[str, str], name: str
) -> None:
    case = CASES[name]
    trajectory = opened(runtime, specimens[name])
    (model_call,) = [s for s in trajectory.steps if s.kind == "model"]
    assert model_call.call_id == case.model_call
    assert case.model_name(model_call.response) == model_server.model  # the real server's
    assert trajectory.outcome["decision"] in OTHER  # a typed verdict, whatever it is
    asked = model_server.prompt_tokens()
    for _ in range(20):
        run = replay_run(
            trajectory=trajectory, agent=case.agent, seed=SEED, variant="b", audit_time=audit_time()
        )
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert (case.model_call, "record") in run.served
    assert model_server.prompt_tokens() == asked


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_audit_of_the_model_s_typed_answer_in_the_sandbox(
    runtime: Runtime, specimens: dict[str, str], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    field, value = case.verdict(opened(runtime, specimens[name]).outcome["decision"])
    outcome = audit(runtime, specimens[name], case.model_call, field, value, n=20)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.classification == "influential"
    assert outcome.envelope is not None
    assert_sealed(runtime, outcome.envelope, capsys, CANARY)


def test_an_order_service_answer_the_model_would_read_is_unservable(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    case = CASES["openai-agents"]
    trajectory = opened(runtime, specimens["openai-agents"])
    delivered = Intervention(
        Strategy.REPLACE, call_id="main/order-service#0", field="/delivered", value=True
    )
    digester = runtime.digests.for_tenant("acme")
    applied = apply_intervention(trajectory, delivered, agent=case.agent, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory,
        agent=case.agent,
        seed=SEED,
        variant="i",
        audit_time=audit_time(),
    )
    assert run.failure == "unservable", run.failure
    assert (case.model_call, "unservable") in run.served
    # in the sandbox alike: no certificate, never a live answer
    outcome = audit(
        runtime, specimens["openai-agents"], "main/order-service#0", "/delivered", True, n=5
    )
    assert outcome.classification == "failed" and outcome.failure == "unservable"
    assert outcome.envelope is None
