"""The wall stays where it is: a run that asks the supervisor for anything an inference
grant does not cover — another model, another boundary, other sampling parameters,
another API, a frame out of shape, more answers than the caps — or that tries to reach
the endpoint itself, fails its branch ``contaminated`` (as a live call does): the forged
ask is not sent and nothing of it is kept. The control: an ask the grant covers is
answered and filed.
"""

from __future__ import annotations

from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import (
    AuditRequest,
    InferenceCaps,
    InferenceGrant,
    Intervention,
    Strategy,
    run_audit,
)
from enclave.sandbox import SandboxLimits
from tests.agents import http_agents as ha
from tests.agents.inference_attacks import ATTACKER
from tests.inference.conftest import ModelServer, audit_time

LIMITS = SandboxLimits(wall_seconds=300.0)
CAPS = InferenceCaps(calls=50, input_tokens=100_000, output_tokens=50_000, wall_seconds=300)


@pytest.fixture(scope="module")
def endpoint(runtime: Runtime, model_server: ModelServer) -> ModelServer:
    origin = model_server.url.removesuffix("/v1")
    with (runtime.home.root / "config.toml").open("a") as fh:
        fh.write(f'\n[inference.endpoints.local]\nurl = "{origin}"\n')
    return model_server


def captured(runtime: Runtime, agent: AgentSpec, server: ModelServer, **inputs: Any) -> str:
    values = {"applicant": "A-7", "base_url": server.url, **inputs}
    with ha.serve_model():
        return capture(runtime, agent, values, tenant_id="acme", seed=5).specimen_id


def audit(runtime: Runtime, specimen: str, server: ModelServer, caps: InferenceCaps) -> Any:
    grant = InferenceGrant(boundary="risk-model", endpoint="local", model=server.model, caps=caps)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.3
        ),
        requester="test",
        samples=2,
        seed=1,
        purpose="did the risk score cause the decision",
        inference=(grant,),
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


def answers_filed(runtime: Runtime, specimen: str) -> int:
    """Answers in the audit's sealed record of ``specimen`` (in the home's payload store)."""
    return len(list(runtime.payloads.answers("acme", specimen)))


def asked(runtime: Runtime, outcome: Any) -> int:
    """Answers the supervisor asked of the endpoint in the audit (its ledger entries)."""
    entries = runtime.ledger.entries(kind="inference.used", subject=outcome.audit_id)
    return sum(t["asked"] for e in entries for t in e.body["arms"].values())


# before the move, a counterfactual's run asks the model through the engine (the same
# request in every sample: the grant varies no seed, so the audit's record answers it
# after the first time), and the preparation re-asks the recorded baseline once: two
# answers a grant covers
LEGITIMATE = 2


def test_an_ask_the_grant_covers_is_answered(runtime: Runtime, endpoint: ModelServer) -> None:
    specimen = captured(runtime, ATTACKER, endpoint, attack="allowed")
    outcome = audit(runtime, specimen, endpoint, CAPS)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert answers_filed(runtime, specimen) == LEGITIMATE + 1


@pytest.mark.parametrize(
    "attack", ["other-model", "other-boundary", "other-params", "other-url", "out-of-shape"]
)
def test_an_ask_outside_the_grant_contaminates_and_asks_nothing(
    runtime: Runtime, endpoint: ModelServer, attack: str
) -> None:
    specimen = captured(runtime, ATTACKER, endpoint, attack=attack)
    outcome = audit(runtime, specimen, endpoint, CAPS)
    assert outcome.classification == "failed" and outcome.envelope is None
    assert outcome.failure == "network", outcome.failure
    # the forged ask was neither asked nor filed
    assert asked(runtime, outcome) == LEGITIMATE
    assert answers_filed(runtime, specimen) == LEGITIMATE


def test_reaching_the_endpoint_itself_contaminates(runtime: Runtime, endpoint: ModelServer) -> None:
    specimen = captured(runtime, ATTACKER, endpoint, attack="endpoint")
    outcome = audit(runtime, specimen, endpoint, CAPS)
    assert outcome.classification == "failed" and outcome.envelope is None
    assert outcome.failure == "network", outcome.failure


def test_an_answer_past_the_caps_contaminates(runtime: Runtime, endpoint: ModelServer) -> None:
    # one answer: the baseline re-asked at preparation takes it; the recorded seed's
    # intervened arm then asks a second
    specimen = captured(runtime, ha.HTTP_AGENT, endpoint)
    one = InferenceCaps(calls=1, input_tokens=100_000, output_tokens=50_000, wall_seconds=300)
    outcome = audit(runtime, specimen, endpoint, one)
    assert outcome.classification == "failed" and outcome.envelope is None
    assert outcome.failure == "network", outcome.failure
