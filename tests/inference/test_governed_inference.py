"""Governed inference against the real model: an evidence intervention on an LLM agent is
``unservable`` without an inference grant and completes with one — the model asked again
by the supervisor (never the sandbox), pinned to the recorded identity, counted in the
certificate, sealed into the audit's own record, so a second identical audit asks the
server nothing and comes out the same. A server answering as another model is
``model_drift``: no certificate.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime, erase_specimen
from enclave.capture import capture
from enclave.errors import Refused
from enclave.replay import (
    AuditRequest,
    InferenceCaps,
    InferenceGrant,
    Intervention,
    Strategy,
    run_audit,
)
from enclave.sandbox import SandboxLimits
from examples.local_model import PORT
from tests.agents import http_agents as ha
from tests.inference.conftest import ModelServer, assert_sealed, audit_time, serving

SEED = 5
LIMITS = SandboxLimits(wall_seconds=300.0)
ENDPOINT = "local"
CREDENTIAL_ENV = "REPLAY_TEST_MODEL_KEY"
CREDENTIAL = "CANARY-ENDPOINT-CREDENTIAL-9b3e"
CAPS = InferenceCaps(calls=400, input_tokens=200_000, output_tokens=100_000, wall_seconds=600)


def configure(runtime: Runtime, server: ModelServer, name: str = ENDPOINT) -> None:
    origin = server.url.removesuffix("/v1")
    with (runtime.home.root / "config.toml").open("a") as fh:
        fh.write(f'\n[inference.endpoints.{name}]\nurl = "{origin}"\n')


@pytest.fixture(scope="module", autouse=True)
def local_endpoint(runtime: Runtime, model_server: ModelServer) -> None:
    configure(runtime, model_server)


def grant(server: ModelServer, **changes: Any) -> InferenceGrant:
    values: dict[str, Any] = {
        "boundary": "risk-model",
        "endpoint": ENDPOINT,
        "model": server.model,
        "caps": CAPS,
        "vary": ("seed",),
    }
    return InferenceGrant(**{**values, **changes})


def captured(runtime: Runtime, server: ModelServer) -> str:
    inputs = {"applicant": "A-7", "base_url": server.url}
    with ha.serve_model():  # the risk tool's live answer (its model server is not asked)
        return capture(runtime, ha.HTTP_AGENT, inputs, tenant_id="acme", seed=SEED).specimen_id


def audit(runtime: Runtime, specimen: str, *grants: InferenceGrant, samples: int = 4) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2
        ),
        requester="test",
        samples=samples,
        seed=1,
        purpose="did the risk score cause the decision",
        inference=grants,
    )
    return run_audit(runtime, request, now=audit_time(), limits=LIMITS)


def predicate(outcome: Any) -> dict[str, Any]:
    import base64
    import json

    statement = json.loads(base64.b64decode(outcome.envelope["payload"]))
    found: dict[str, Any] = statement["predicate"]
    return found


def assert_governed(
    model_server: ModelServer,
    capsys: pytest.CaptureFixture[str],
    runtime: Runtime,
    audit: Callable[..., Any],
    *,
    boundary: str,
    canary: str,
) -> None:
    """An agent whose model is captured at the wire, audited with an intervention its
    model reads: ``unservable`` without a grant, the server not asked; with a seeded
    grant a certificate whose answers the supervisor asked, pinned and counted, the
    canary sealed. ``audit(*grants)`` runs the audit."""
    before = model_server.prompt_tokens()
    refused = audit()
    assert refused.failure == "unservable" and refused.envelope is None
    assert model_server.prompt_tokens() == before  # a replay never asks the model
    grant = InferenceGrant(
        boundary=boundary, endpoint=ENDPOINT, model=model_server.model, caps=CAPS, vary=("seed",)
    )
    outcome = audit(grant)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    # a verdict, whichever the model's answers make it: a certificate, not a failure
    assert outcome.classification in {"influential", "equivalent", "inconclusive"}
    assert outcome.envelope is not None
    assert model_server.prompt_tokens() > before  # asked, by the supervisor
    found = predicate(outcome)["inference"]
    assert found["grants"] == [grant.to_dict()]
    assert found["arms"]["intervened"]["asked"] >= 1
    assert found["arms"]["intervened"]["output_tokens"] > 0
    assert found["arms"]["baseline"]["asked"] == 0  # the baseline is the record's
    assert found["arms"]["preparation"]["asked"] >= 1  # re-asked once, and reproduced
    assert any(row["inference"] != "none" for row in predicate(outcome)["served_by"])
    assert_sealed(runtime, outcome.envelope, capsys, canary)


def test_an_evidence_intervention_is_unservable_without_a_grant_and_completes_with_one(
    runtime: Runtime,
    model_server: ModelServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the operator's credential for the endpoint: in the supervisor's environment only
    monkeypatch.setenv(CREDENTIAL_ENV, CREDENTIAL)
    with (runtime.home.root / "config.toml").open("a") as fh:
        origin = model_server.url.removesuffix("/v1")
        fh.write(f'\n[inference.endpoints.keyed]\nurl = "{origin}"\n')
        fh.write(f'credential_env = "{CREDENTIAL_ENV}"\n')
    specimen = captured(runtime, model_server)
    refused = audit(runtime, specimen)
    assert refused.failure == "unservable" and refused.envelope is None

    before = model_server.prompt_tokens()
    first = audit(runtime, specimen, grant(model_server, endpoint="keyed"))
    assert first.failure is None, (first.failure, first.failure_detail)
    asked = model_server.prompt_tokens() - before
    assert asked > 0  # the server was asked: by the supervisor
    found = predicate(first)["inference"]
    assert found["grants"] == [grant(model_server, endpoint="keyed").to_dict()]
    assert found["arms"]["intervened"]["asked"] >= 1
    assert found["arms"]["intervened"]["input_tokens"] > 0
    assert found["arms"]["baseline"]["asked"] == 0  # the baseline is the record's
    assert found["arms"]["preparation"]["asked"] >= 1  # the baseline re-asked, once
    rows = predicate(first)["served_by"]
    assert all("inference" in row for row in rows)
    assert any(row["arm"] == "intervened" and row["inference"] != "none" for row in rows)
    assert any("pinned model revision" in s for s in predicate(first)["not_established"])

    # a second identical audit: every answer from the audit's record, nothing asked
    before = model_server.prompt_tokens()
    second = audit(runtime, specimen, grant(model_server, endpoint="keyed"))
    assert model_server.prompt_tokens() == before
    assert second.classification == first.classification
    assert second.effect == first.effect
    again = predicate(second)["inference"]["arms"]
    assert all(tally["asked"] == 0 for tally in again.values())
    assert (
        again["intervened"]["from_record"]
        == found["arms"]["intervened"]["asked"] + found["arms"]["intervened"]["from_record"]
    )
    assert_sealed(runtime, first.envelope, capsys, ha.CANARY)
    # the credential: in no certificate, output or file, and not in the worker's fixed
    # environment (the certificate names every variable it has)
    assert_sealed(runtime, first.envelope, capsys, CREDENTIAL)
    names = predicate(first)["environment"]["process_environment"]
    assert CREDENTIAL_ENV not in names


def test_an_endpoint_answering_as_another_model_fails_model_drift(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    specimen = captured(runtime, model_server)
    # the same weights served under another identity: what a provider's silent swap of the
    # model behind a name looks like from outside
    with serving("smollm2-135m-2026-12-01", PORT + 1, tmp_path / "server.log") as drifted:
        configure(runtime, drifted, name="drifted")
        outcome = audit(runtime, specimen, grant(model_server, endpoint="drifted"))
    assert outcome.classification == "failed" and outcome.failure == "model_drift"
    assert outcome.envelope is None
    assert not list(runtime.payloads.answers("acme", specimen))


def test_a_provider_that_no_longer_answers_as_recorded_fails_the_baseline(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    specimen = captured(runtime, model_server)
    # the same model under the same name, now sampling hot where the request names no
    # temperature: asked again, the recorded baseline no longer reaches its decision
    with serving(model_server.model, PORT + 2, tmp_path / "hot.log", temperature=1.8) as hot:
        configure(runtime, hot, name="hot")
        outcome = audit(runtime, specimen, grant(model_server, endpoint="hot"))
    assert outcome.classification == "baseline-not-reproduced", outcome.failure
    assert outcome.envelope is not None  # a certificate that concludes nothing
    assert not predicate(outcome)["baseline"]["reproduced"]


def test_a_grant_pinned_to_another_identity_than_the_record_s_is_refused(
    runtime: Runtime, model_server: ModelServer
) -> None:
    specimen = captured(runtime, model_server)
    with pytest.raises(Refused) as refused:
        audit(runtime, specimen, grant(model_server, model="smollm2-135m-2026-12-01"))
    assert refused.value.code == "inference_not_pinned"


def test_erasing_the_specimen_erases_the_audit_s_answers(
    runtime: Runtime, model_server: ModelServer
) -> None:
    specimen = captured(runtime, model_server)
    outcome = audit(runtime, specimen, grant(model_server), samples=2)
    assert outcome.failure is None, outcome.failure
    folder = runtime.home.payloads_dir / "acme" / specimen / "answers"
    assert list(runtime.payloads.answers("acme", specimen)) and list(folder.glob("*.ct"))
    erase_specimen(runtime, specimen, now=audit_time())
    assert list(runtime.payloads.answers("acme", specimen)) == []
    assert not folder.exists()
    with pytest.raises(Refused) as refused:
        audit(runtime, specimen, grant(model_server), samples=2)
    assert refused.value.code == "unresolvable"
