"""Governed inference for an agent on the Anthropic messages API (the real anthropic
client, ``tests.agents.anthropic_agents``), against the stand-in and the real server,
which speaks that API too: an answer's tokens are counted from its own usage form
(``input_tokens``, the cache's input tokens, ``output_tokens``); the operator's
credential goes as the API's ``x-api-key``; the API version the record's requests named
is the one asked for, and no other; the API takes no provider seed, so a grant that would
pair samples by one is refused before anything is asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from enclave import Runtime
from enclave.capture import capture
from enclave.errors import BadInput, Refused
from enclave.replay import AuditRequest, InferenceGrant, Intervention, Strategy, run_audit
from enclave.replay.inference import Endpoint, InferenceBroker, InferenceRecord, endpoints_of
from enclave.replay.runs import Trajectory, open_specimen
from enclave.sandbox import AskRefused, SandboxLimits
from tests.agents import anthropic_agents as aa
from tests.agents import http_agents as ha
from tests.inference.conftest import ModelServer, assert_sealed, audit_time
from tests.inference.test_governed_inference import CAPS, predicate
from tests.support.answer_store import answer_store

CREDENTIAL = "CANARY-ANTHROPIC-KEY-2f7a90"
TAG = {"seed": 1, "arm": "intervened"}
LIMITS = SandboxLimits(wall_seconds=300.0)


class Overheard(httpx.BaseTransport):
    """The broker's transport, keeping the headers of every request it sends."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.headers: list[httpx.Headers] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.headers.append(request.headers)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(params=["stand-in", "real"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(base URL, the model identity its answers carry)."""
    if request.param == "real":
        real: ModelServer = request.getfixturevalue("model_server")
        yield real.url, real.model
    else:
        with ha.serve_model() as url:
            yield url, ha.MODEL_NAME


def captured(runtime: Runtime, base_url: str) -> str:
    inputs = {"applicant": "A-7", "base_url": base_url}
    with ha.serve_model():  # the risk tool's live answer
        return capture(runtime, aa.ANTHROPIC_AGENT, inputs, tenant_id="acme", seed=5).specimen_id


def opened(runtime: Runtime, base_url: str) -> tuple[Trajectory, bytes]:
    specimen = captured(runtime, base_url)
    found = open_specimen(runtime, specimen, job_id="broker", lease_seconds=60, now=audit_time())
    return found.trajectory, found.record_key


def grant(model: str, **changes: Any) -> InferenceGrant:
    values: dict[str, Any] = {
        "boundary": "risk-model",
        "endpoint": "messages",
        "model": model,
        "caps": CAPS,
    }
    return InferenceGrant(**{**values, **changes})


def broker(
    runtime: Runtime,
    server: tuple[str, str],
    root: Path,
    transport: Any = None,
    **grant_changes: Any,
) -> tuple[InferenceBroker, Trajectory]:
    base, model = server
    trajectory, key = opened(runtime, base)
    endpoint = Endpoint(
        name="messages",
        origin=base.removesuffix("/v1"),
        credential_env="MODEL_KEY",
        api="anthropic",
        environ={"MODEL_KEY": CREDENTIAL},
    )
    record = InferenceRecord(
        answer_store(runtime, root, trajectory.specimen_id),
        tenant_id="acme",
        specimen_id=trajectory.specimen_id,
        key=key,
    )
    return (
        InferenceBroker(
            grants=[grant(model, **grant_changes)],
            endpoints={"messages": endpoint},
            trajectory=trajectory,
            record=record,
            seeds=frozenset({1, 2}),
            transport=transport,
        ),
        trajectory,
    )


def ask_of(trajectory: Trajectory, content: str, **headers: str) -> dict[str, Any]:
    """An ask as the engine sends it: the recorded request with another prompt."""
    (step,) = [s for s in trajectory.steps if s.name == "risk-model"]
    request = dict(step.request)
    request["headers"] = {**request["headers"], **headers}
    body = {**request["body"]["json"], "messages": [{"role": "user", "content": content}]}
    request["body"] = {"json": body}
    return {"boundary": "risk-model", "request": request}


def test_an_answer_of_the_messages_api_is_counted_and_asked_with_its_key(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    heard = Overheard()
    asker, trajectory = broker(runtime, server, tmp_path, transport=heard)
    try:
        ask = ask_of(trajectory, "risk of the applicant 0.1")
        answer = asker.answer(TAG, ask)
        assert answer["status"] == 200 and answer["body"]["json"]["model"] == server[1]
        usage = answer["body"]["json"]["usage"]
        assert asker.input_tokens == usage["input_tokens"] + usage.get(
            "cache_read_input_tokens", 0
        ) + usage.get("cache_creation_input_tokens", 0)
        assert asker.input_tokens > 0 and asker.output_tokens == usage["output_tokens"] > 0
        (sent,) = heard.headers
        assert sent["x-api-key"] == CREDENTIAL and "authorization" not in sent
        recorded = ask["request"]["headers"]["anthropic-version"]
        assert sent["anthropic-version"] == recorded
    finally:
        asker.close()


def test_an_ask_naming_another_api_version_is_refused(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    asker, trajectory = broker(runtime, server, tmp_path)
    try:
        with pytest.raises(AskRefused):
            asker.answer(TAG, ask_of(trajectory, "risk 0.1", **{"anthropic-version": "2099-01-01"}))
        with pytest.raises(AskRefused):
            asker.answer(TAG, ask_of(trajectory, "risk 0.1", **{"anthropic-beta": "tools-2099"}))
        assert asker.calls == 0
    finally:
        asker.close()


def test_a_seeded_grant_is_refused_for_an_api_that_takes_no_seed(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    with pytest.raises(Refused) as refused:
        broker(runtime, server, tmp_path, vary=("seed",))
    assert refused.value.code == "inference_unseeded"


def test_the_api_of_an_endpoint_is_configuration() -> None:
    found = endpoints_of(
        {"inference": {"endpoints": {"m": {"url": "http://h:1", "api": "anthropic"}}}}
    )
    assert found["m"].api == "anthropic"
    assert (
        endpoints_of({"inference": {"endpoints": {"m": {"url": "http://h:1"}}}})["m"].api
        == "openai"
    )
    with pytest.raises(BadInput, match="api") as bad:
        endpoints_of({"inference": {"endpoints": {"m": {"url": "http://h:1", "api": "CANARY-x"}}}})
    assert "CANARY" not in str(bad.value)


def test_an_anthropic_agent_audit_completes_with_a_grant(
    runtime: Runtime, model_server: ModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with (runtime.home.root / "config.toml").open("a") as fh:
        origin = model_server.url.removesuffix("/v1")
        fh.write(f'\n[inference.endpoints.messages]\nurl = "{origin}"\napi = "anthropic"\n')
    specimen = captured(runtime, model_server.url)

    def audit(*grants: InferenceGrant) -> Any:
        request = AuditRequest(
            specimen_id=specimen,
            intervention=Intervention(
                Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2
            ),
            requester="test",
            samples=4,
            seed=1,
            purpose="did the risk score cause the decision",
            inference=grants,
        )
        return run_audit(runtime, request, now=audit_time(), limits=LIMITS)

    refused = audit()
    assert refused.failure == "unservable" and refused.envelope is None
    done = audit(grant(model_server.model))
    assert done.failure is None, (done.failure, done.failure_detail)
    arms = predicate(done)["inference"]["arms"]
    # unseeded, every sample asks what the preparation asked: from the audit's record
    assert arms["preparation"]["asked"] >= 2, arms  # the baseline again, the intervention
    assert arms["intervened"]["asked"] == 0 and arms["intervened"]["from_record"] >= 1
    for tally in (arms["preparation"], arms["intervened"]):
        assert tally["input_tokens"] > 0 and tally["output_tokens"] > 0
    assert_sealed(runtime, done.envelope, capsys, ha.CANARY)
