"""The wire adapter (``enclave.adapters.http``) with the real openai client against a
real local HTTP server: request keys are stable across identical runs and change with a
real change; no credential is ever recorded; a captured run replays from the record,
in-process and in the sandbox, and a counterfactual whose model request the record does
not hold ends ``unservable``, naming the model call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI

from enclave import Home, Runtime
from enclave.adapters.http import request_key
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import http_agents as ha
from tests.support.canary import find_canaries, scan_tree

SEED = 5
API_KEY = "sk-never-recorded-4c1d"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("http") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(runtime: Runtime, agent: AgentSpec = ha.HTTP_AGENT) -> tuple[str, Trajectory]:
    with ha.serve_model() as url:
        inputs = {"applicant": "A-1", "base_url": url}
        specimen = capture(runtime, agent, inputs, tenant_id="acme", seed=SEED)
    trajectory = open_specimen(
        runtime, specimen.specimen_id, job_id="http", lease_seconds=60, now=now()
    ).trajectory
    return specimen.specimen_id, trajectory


# -- the request key ------------------------------------------------------------------


async def _sent_by_openai(content: str, **client: Any) -> list[httpx.Request]:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "ok"},
                    }
                ],
            },
        )

    model = AsyncOpenAI(
        api_key=API_KEY,
        base_url="http://model.invalid/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)),
        **client,
    )
    for _ in range(2):
        await model.chat.completions.create(
            model="m", messages=[{"role": "user", "content": content}]
        )
    return sent


def test_two_identical_openai_requests_have_one_key_and_a_real_change_another() -> None:
    import asyncio

    first, second = asyncio.run(_sent_by_openai("hello"))
    assert first.headers != second.headers or first.headers.get("x-stainless-retry-count")
    assert request_key(first) == request_key(second)
    (changed, _) = asyncio.run(_sent_by_openai("hello!"))
    assert request_key(changed) != request_key(first)
    (other_key, _) = asyncio.run(_sent_by_openai("hello", organization="org-other"))
    assert request_key(other_key) != request_key(first)  # a header the answer depends on
    assert API_KEY not in json.dumps(request_key(first))


def test_volatile_headers_and_body_layout_leave_the_key_unchanged() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    plain = httpx.Request("POST", "http://h/v1/chat", json=body)
    noisy = httpx.Request(
        "POST",
        "http://h/v1/chat",
        content=json.dumps(dict(reversed(body.items())), indent=2).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + API_KEY,
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "x-stainless-retry-count": "1",
            "user-agent": "other/1.0",
            "idempotency-key": "stainless-python-retry-1",
        },
    )
    assert request_key(plain) == request_key(noisy)
    assert request_key(httpx.Request("POST", "http://h/v1/other", json=body)) != request_key(plain)
    assert request_key(httpx.Request("GET", "http://h/v1/chat")) != request_key(plain)
    assert "authorization" not in request_key(noisy)["headers"]


# -- capture and replay ---------------------------------------------------------------


@pytest.mark.parametrize("agent", [ha.HTTP_AGENT, ha.HTTP2_AGENT], ids=["httpx", "httpx2"])
def test_a_run_with_the_openai_client_replays_from_the_record(
    runtime: Runtime, agent: AgentSpec
) -> None:
    _, trajectory = captured(runtime, agent)
    assert trajectory.outcome["decision"] == "REJECT"
    model_calls = [s for s in trajectory.steps if s.name == "risk-model"]
    assert [s.call_id for s in model_calls] == ["main/risk-model#0"]
    assert model_calls[0].request["body"]["json"]["model"] == ha.MODEL_NAME
    for _ in range(100):
        run = replay_run(
            trajectory=trajectory, agent=agent, seed=SEED, variant="b", audit_time=now()
        )
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert ("main/risk-model#0", "record") in run.served


@pytest.mark.parametrize("agent", [ha.HTTP_AGENT, ha.WRAPPING_AGENT], ids=["plain", "wrapping"])
def test_a_model_request_the_record_lacks_is_unservable_even_when_the_agent_wraps_it(
    runtime: Runtime, agent: AgentSpec
) -> None:
    # a framework that re-raises the replay's abstention as its own error does not turn
    # "the record cannot answer" into an agent error
    specimen, trajectory = captured(runtime, agent)
    intervention = Intervention(Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2)
    digester = runtime.digests.for_tenant("acme")
    applied = apply_intervention(trajectory, intervention, agent=agent, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory, agent=agent, seed=SEED, variant="i", audit_time=now()
    )
    assert run.layers is None
    assert run.failure == "unservable", run.failure
    assert any(how == "unservable" for _, how in run.served)


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


def test_a_counterfactual_model_request_the_record_does_not_hold_is_unservable(
    runtime: Runtime,
) -> None:
    specimen, _ = captured(runtime)
    outcome = audit(runtime, specimen, "/risk", 0.2, samples=5)
    # the model would be asked about another risk: only a live model could answer
    assert outcome.classification == "failed" and outcome.failure == "unservable"
    assert outcome.envelope is None


def test_an_answer_the_model_request_does_not_depend_on_is_served_by_the_record(
    runtime: Runtime,
) -> None:
    specimen, _ = captured(runtime)
    same_length = "x" * len(ha.CANARY)  # the note reaches no request and no decision
    outcome = audit(runtime, specimen, "/note", same_length, samples=100)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == "equivalent"


def test_no_credential_or_sealed_content_leaves_the_payload_store(
    runtime: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    specimen, _ = captured(runtime)
    outcome = audit(runtime, specimen, "/note", "y" * len(ha.CANARY), samples=10)
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), [ha.CANARY]) == []
    out = capsys.readouterr()
    assert ha.CANARY not in out.out + out.err
    # the client's api key is neither recorded nor sealed: it appears nowhere at all
    assert scan_tree(runtime.home.root, [ha.CANARY, "placeholder-key"]) == {}


def test_requests_to_two_ports_of_one_host_have_two_keys() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    one = httpx.Request("POST", "http://127.0.0.1:8931/v1/chat", json=body)
    other = httpx.Request("POST", "http://127.0.0.1:8932/v1/chat", json=body)
    assert request_key(one) != request_key(other)
    assert request_key(one)["url"] == "http://127.0.0.1:8931/v1/chat"
    # a scheme's default port is the URL without one, as the client writes either
    default = httpx.Request("POST", "https://h:443/v1/chat", json=body)
    assert request_key(default)["url"] == "https://h/v1/chat"
