"""Governed inference through the HTTP service: a policy's grants travel with the request
and are named in the answer; Cedar is asked about the data flow they open — restricted
content goes to the provider only for a purpose the access policy allows, and a refusal
is recorded and charged nothing; the OpenAPI document types the inference sections, and
a certificate's summary carries its signed inference section."""

from __future__ import annotations

import base64
import json
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime, utc_now
from enclave.capture import capture
from enclave.cli import capture_incidents
from enclave.governance import (
    InterventionPolicy,
    activate_policy,
    add_analyst,
    load_policy,
    policies_root,
    validate_policy,
)
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.replay.inference import InferenceCaps, InferenceGrant
from enclave.service import create_app
from tests.agents import http_agents as ha
from tests.support.canary import INCIDENT_CANARIES, find_canaries

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

API = "/api/v1"
PERMITTING = "model-incident-review"  # listed in enclave.cedar
CAPS = {"calls": 40, "input_tokens": 20000, "output_tokens": 4000, "wall_seconds": 120}
PLANNER_GRANT = {
    "boundary": "planner-model",
    "endpoint": "local",
    "model": "planner-r5",
    "vary": ["seed"],
    "caps": CAPS,
}
DECIDER_GRANT = {
    "boundary": "decider",
    "endpoint": "local",
    "model": "r1",
    "vary": [],
    "caps": CAPS,
}


def with_grant(shipped: str, grant: dict[str, Any]) -> InterventionPolicy:
    """A shipped policy file with one ``[[inference]]`` table appended."""
    text = (policies_root() / "interventions" / shipped).read_text()
    table = ["", "[[inference]]"]
    table += [f"{k} = {json.dumps(v)}" for k, v in grant.items() if k != "caps"]
    table += ["[inference.caps]"] + [f"{k} = {v}" for k, v in grant["caps"].items()]
    return InterventionPolicy.from_toml((text + "\n".join(table) + "\n").encode())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Home, Any]]:
    home = Home.init(tmp_path_factory.mktemp("service-inference") / "home")
    runtime = Runtime.open(home, env={})
    now = utc_now()
    try:
        specimens = capture_incidents(runtime)
        policies = [
            with_grant("shard-preferred-shard-replace.toml", PLANNER_GRANT),
            with_grant("procurement-supplier-confidence-replace.toml", DECIDER_GRANT),
            InterventionPolicy.from_toml(
                (policies_root() / "interventions" / "claims-fraud-score-nullify.toml").read_bytes()
            ),
        ]
        for policy in policies:
            load_policy(runtime, policy, now=now)
            assert validate_policy(runtime, policy.id, now=now).ok
            activate_policy(runtime, policy.id, now=now)
        _, token = add_analyst(
            runtime, "alice", tenant="acme", roles=["auditor", "restricted-clearance"], now=now
        )
    finally:
        runtime.close()
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield client, home, specimens


def shard_body(specimen: str, purpose: str) -> dict[str, Any]:
    return {
        "specimen_id": specimen,
        "call_id": "planner/planner-model#0",
        "field": "/preferred_shard",
        "strategy": "replace",
        "value": "shard-b",
        "samples": 4,
        "seed": 1,
        "purpose": purpose,
    }


def refusals(home: Home) -> list[str]:
    runtime = Runtime.open(home, env={})
    try:
        return [e.body["code"] for e in runtime.ledger.entries(kind="audit.refused")]
    finally:
        runtime.close()


def admissions(home: Home) -> int:
    runtime = Runtime.open(home, env={})
    try:
        return len(runtime.ledger.entries(kind="audit.admitted"))
    finally:
        runtime.close()


def test_restricted_content_goes_to_the_provider_only_for_a_permitting_purpose(
    world: tuple[TestClient, Home, Any],
) -> None:
    client, home, specimens = world
    shard = specimens["shard-maintenance"]
    before = admissions(home)
    refused = client.post(f"{API}/audits", json=shard_body(shard, "shard review"))
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "inference_purpose_not_allowed"
    assert refusals(home)[-1] == "inference_purpose_not_allowed"
    assert admissions(home) == before  # refused before the budget: nothing charged
    admitted = client.post(f"{API}/audits", json=shard_body(shard, PERMITTING))
    assert admitted.status_code == 202, admitted.text
    assert admitted.json()["inference"] == [PLANNER_GRANT]
    assert admissions(home) == before + 1
    for response in (refused, admitted):
        assert not find_canaries(response.content, INCIDENT_CANARIES)


def test_confidential_content_and_no_inference_need_no_such_purpose(
    world: tuple[TestClient, Home, Any],
) -> None:
    client, _, specimens = world
    procurement = client.post(
        f"{API}/audits",
        json={
            "specimen_id": specimens["procurement"],
            "call_id": "main/supplier_risk#0",
            "field": "/confidence",
            "strategy": "replace",
            "value": 0.56,
            "samples": 4,
            "seed": 1,
            "purpose": "purchase-order-review",
        },
    )
    assert procurement.status_code == 202, procurement.text
    assert procurement.json()["inference"] == [DECIDER_GRANT]
    claims = client.post(
        f"{API}/audits",
        json={
            "specimen_id": specimens["claims"],
            "call_id": "main/fraud_score#0",
            "field": "/fraud_score",
            "strategy": "nullify",
            "samples": 4,
            "seed": 1,
            "purpose": "claims review",
        },
    )
    assert claims.status_code == 202, claims.text
    assert claims.json()["inference"] == []


def test_the_openapi_document_types_the_inference_sections(
    world: tuple[TestClient, Home, Any],
) -> None:
    client, _, _ = world
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    requested = document["paths"][f"{API}/audits"]["post"]["responses"]["202"]
    assert requested["content"]["application/json"]["schema"]["$ref"].endswith(
        "/AuditRequestedModel"
    )
    grants = schemas["AuditRequestedModel"]["properties"]["inference"]
    assert grants["items"]["$ref"].endswith("/InferenceGrantModel")
    summary = document["paths"][f"{API}/certificates/{{audit_id}}/summary"]["get"]
    ref = summary["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/CertificateSummary")
    section = json.dumps(schemas["CertificateSummary"]["properties"]["inference"])
    assert "InferenceSummary" in section
    assert set(schemas["InferenceSummary"]["properties"]) == {"grants", "seeded", "arms"}
    assert set(schemas["InferenceArms"]["properties"]) == {
        "preparation",
        "baseline",
        "intervened",
        "placebo",
    }
    assert set(schemas["InferenceTally"]["properties"]) == {
        "asked",
        "from_record",
        "input_tokens",
        "output_tokens",
    }
    assert set(schemas["InferenceGrantModel"]["required"]) == {
        "boundary",
        "endpoint",
        "model",
        "vary",
        "caps",
    }


def test_a_certificate_summary_types_the_signed_inference_section(tmp_path: Path) -> None:
    """An audit granted inference on an agent that asks a hosted model through the real
    openai client, queued and run by a real worker, the endpoint a server speaking the
    OpenAI API: the summary's ``inference`` is the signed section, counts only."""
    from enclave.jobs import run_worker, submit_audit

    home = Home.init(tmp_path / "home")
    grant = InferenceGrant(
        boundary="risk-model",
        endpoint="local",
        model=ha.MODEL_NAME,
        caps=InferenceCaps(**CAPS),
        vary=("seed",),
    )
    runtime = Runtime.open(home, env={})
    try:
        with ha.serve_model() as url:
            inputs = {"applicant": "A-7", "base_url": url}
            specimen = capture(runtime, ha.HTTP_AGENT, inputs, tenant_id="acme", seed=5)
        request = AuditRequest(
            specimen_id=specimen.specimen_id,
            intervention=Intervention(
                Strategy.REPLACE, call_id="main/risk#0", field="/risk", value=0.2
            ),
            purpose=PERMITTING,
            requester="alice",
            samples=2,
            inference=(grant,),
        )
        queued = submit_audit(runtime, request, tenant_id="acme", now=utc_now())
        _, token = add_analyst(
            runtime,
            "alice",
            tenant="acme",
            roles=["auditor", "restricted-clearance"],
            now=utc_now(),
        )
    finally:
        runtime.close()
    with ha.serve_model() as endpoint:
        with (home.root / "config.toml").open("a") as fh:
            fh.write(f'\n[inference.endpoints.local]\nurl = "{endpoint.removesuffix("/v1")}"\n')
        run_worker(
            lambda: Runtime.open(home, env={}), worker_id="w1", stop=threading.Event(), once=True
        )
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        done = client.get(f"{API}/audits/{queued.audit_id}", headers=auth).json()
        assert done["status"] == "COMPLETED", done
        envelope = client.get(f"{API}/certificates/{queued.audit_id}", headers=auth).json()
        signed = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
        summary = client.get(f"{API}/certificates/{queued.audit_id}/summary", headers=auth)
    assert summary.status_code == 200
    body = summary.json()
    assert body == signed  # every member as signed, nothing added or dropped
    section = body["inference"]
    assert section["grants"] == [grant.to_dict()]
    assert section["arms"]["baseline"]["asked"] == 0
    arm = section["arms"]["intervened"]
    assert arm["asked"] + arm["from_record"] >= 1 and arm["input_tokens"] > 0
    assert ha.CANARY not in summary.text
