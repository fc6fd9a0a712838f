"""The wire adapter (``enclave.adapters.http``) with the real anthropic client, on its own
HTTP library (httpx2), against a real local server speaking the messages API: request
keys drop the api key and the client's volatile stamps but keep what the answer depends
on; a captured run replays from the record, in-process and in the sandbox; a
counterfactual whose model request the record does not hold ends ``unservable``; neither
the credential nor sealed content leaves the payload store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest
from anthropic import AsyncAnthropic

from enclave import Home, Runtime
from enclave.adapters.http import request_key
from enclave.capture import capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import anthropic_agents
from tests.agents import http_agents as ha
from tests.support.canary import find_canaries, scan_tree

SEED = 5
API_KEY = "sk-ant-never-recorded-77f0"
AGENT = anthropic_agents.ANTHROPIC_AGENT


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("anthropic") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(runtime: Runtime) -> tuple[str, Trajectory]:
    with ha.serve_model() as url:
        inputs = {"applicant": "A-1", "base_url": url}
        specimen = capture(runtime, AGENT, inputs, tenant_id="acme", seed=SEED)
    trajectory = open_specimen(
        runtime, specimen.specimen_id, job_id="anthropic", lease_seconds=60, now=now()
    ).trajectory
    return specimen.specimen_id, trajectory


# -- the request key ------------------------------------------------------------------


async def _sent_by_anthropic(content: str, **client: Any) -> list[httpx2.Request]:
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    model = AsyncAnthropic(
        api_key=API_KEY,
        base_url="http://model.invalid",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
        **client,
    )
    for _ in range(2):
        await model.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": content}]
        )
    return sent


def test_two_identical_anthropic_requests_have_one_key_and_a_real_change_another() -> None:
    first, second = asyncio.run(_sent_by_anthropic("hello"))
    # sent (as a bearer token by this client version), and never part of the key
    assert any(API_KEY in value for value in first.headers.values())
    assert request_key(first) == request_key(second)
    assert not {"authorization", "x-api-key"} & set(request_key(first)["headers"])
    assert API_KEY not in json.dumps(request_key(first))
    assert not any(h.startswith("x-stainless-") for h in request_key(first)["headers"])
    (changed, _) = asyncio.run(_sent_by_anthropic("hello!"))
    assert request_key(changed) != request_key(first)
    # a header the answer depends on (the API version the server speaks) stays in the key
    (other_version, _) = asyncio.run(
        _sent_by_anthropic("hello", default_headers={"anthropic-version": "2099-01-01"})
    )
    assert request_key(other_version) != request_key(first)


# -- capture and replay ---------------------------------------------------------------


def test_a_run_with_the_anthropic_client_replays_from_the_record(runtime: Runtime) -> None:
    _, trajectory = captured(runtime)
    assert trajectory.outcome["decision"] == "REJECT"
    (model_call,) = [s for s in trajectory.steps if s.name == "risk-model"]
    assert model_call.request["url"].endswith("/v1/messages")
    assert model_call.request["body"]["json"]["model"] == ha.MODEL_NAME
    assert not {"authorization", "x-api-key"} & set(model_call.request["headers"])
    for _ in range(100):
        run = replay_run(
            trajectory=trajectory, agent=AGENT, seed=SEED, variant="b", audit_time=now()
        )
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert (model_call.call_id, "record") in run.served


def test_a_model_request_the_record_lacks_is_unservable(runtime: Runtime) -> None:
    _, trajectory = captured(runtime)
    intervention = Intervention(Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2)
    digester = runtime.digests.for_tenant("acme")
    applied = apply_intervention(trajectory, intervention, agent=AGENT, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory, agent=AGENT, seed=SEED, variant="i", audit_time=now()
    )
    assert run.failure == "unservable", run.failure
    assert ("main/risk-model#0", "unservable") in run.served


def audit(runtime: Runtime, specimen: str, field: str, value: Any, samples: int) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/risk#0", field=field, value=value
        ),
        requester="test",
        samples=samples,
        seed=1,
        purpose="wire adapter",
    )
    return run_audit(runtime, request, now=now(), limits=SandboxLimits(wall_seconds=60.0))


def test_in_the_sandbox_a_counterfactual_is_unservable_and_an_unread_answer_equivalent(
    runtime: Runtime,
) -> None:
    specimen, _ = captured(runtime)
    asked_again = audit(runtime, specimen, "/risk", 0.2, samples=5)
    assert asked_again.classification == "failed" and asked_again.failure == "unservable"
    assert asked_again.envelope is None
    unread = audit(runtime, specimen, "/note", "x" * len(ha.CANARY), samples=100)
    assert unread.failure is None, unread.failure
    assert unread.classification == "equivalent"


def test_no_credential_or_sealed_content_leaves_the_payload_store(
    runtime: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    specimen, _ = captured(runtime)
    outcome = audit(runtime, specimen, "/note", "y" * len(ha.CANARY), samples=10)
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), [ha.CANARY]) == []
    out = capsys.readouterr()
    assert ha.CANARY not in out.out + out.err
    assert scan_tree(runtime.home.root, [ha.CANARY, "placeholder-key"]) == {}
