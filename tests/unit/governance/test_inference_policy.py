"""Governed-inference grants from the policy that authorises them to the audit request:
``[[inference]]`` tables in a policy file (parsed, stored, shown), eligibility's checks of
each grant against the specimen's metadata, and the Cedar rule on sending restricted
content to the provider."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from enclave import BadInput, Refused, Runtime
from enclave.governance import (
    AccessPolicy,
    Action,
    Analyst,
    AuditDraft,
    InterventionPolicy,
    Resource,
    activate_policy,
    check_eligibility,
    get_policy,
    inference_classification,
    load_policy,
    validate_policy,
)
from enclave.replay.inference import InferenceCaps, InferenceGrant
from ledger import Classification, canonical_digest

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CAPS = {"calls": 40, "input_tokens": 20000, "output_tokens": 4000, "wall_seconds": 120}
DECIDER = {"boundary": "decider", "endpoint": "local", "model": "r1", "vary": ["seed"]}
PLANNER = {"boundary": "planner-model", "endpoint": "local", "model": "planner-r5"}
PERMITTING = "model-incident-review"  # a purpose enclave.cedar lets carry restricted content


def policy_text(*grants: dict[str, Any], **changes: Any) -> bytes:
    """The supplier-confidence REPLACE policy with ``[[inference]]`` tables."""
    doc: dict[str, Any] = {
        "id": "test.inference.replace",
        "version": 1,
        "tenant": "acme",
        "provider": "risk-office",
        "tool": "supplier_risk",
        "schema_id": "supplier-risk",
        "schema_version": "2",
        "field": "/confidence",
        "strategy": "replace",
        "authoritative_substitutes": ["approval-policy"],
    }
    doc.update(changes)
    lines = [f"{k} = {json.dumps(v)}" for k, v in doc.items()]
    lines += ["[params]", "alternates = [0.5, 0.56]"]
    lines += ["[budget]", "bits = 100000", "window_seconds = 86400"]
    for grant in grants:
        lines.append("[[inference]]")
        caps = grant.get("caps", CAPS)
        lines += [f"{k} = {json.dumps(v)}" for k, v in grant.items() if k != "caps"]
        if isinstance(caps, dict):
            lines.append("[inference.caps]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in caps.items()]
    return ("\n".join(lines) + "\n").encode()


def active(runtime: Runtime, data: bytes) -> InterventionPolicy:
    policy = load_policy(runtime, InterventionPolicy.from_toml(data), now=T0)
    assert validate_policy(runtime, policy.id, policy.version, now=T0).ok
    return activate_policy(runtime, policy.id, policy.version, now=T0)


def draft(specimen: str, **changes: Any) -> AuditDraft:
    base: dict[str, Any] = {
        "specimen_id": specimen,
        "strategy": "replace",
        "purpose": "purchase-order-review",
        "samples": 4,
        "seed": 1,
        "call_id": "main/supplier_risk#0",
        "field": "/confidence",
        "value": 0.56,
        "value_given": True,
    }
    base.update(changes)
    return AuditDraft(**base)


def reseal(runtime: Runtime, specimen_id: str, new_id: str, *, steps: Any) -> str:
    """Seal a copy of a specimen's metadata with other step records (no payloads)."""
    record = runtime.ledger.get_specimen(specimen_id)
    manifest = json.loads(json.dumps(record.manifest))
    manifest["specimen_id"] = new_id
    copy = dataclasses.replace(
        record,
        specimen_id=new_id,
        manifest=manifest,
        manifest_digest=canonical_digest(manifest),
        steps=steps,
    )
    runtime.ledger.seal_specimen(copy)
    return new_id


def refusal(runtime: Runtime, d: AuditDraft) -> str:
    with pytest.raises(Refused) as caught:
        check_eligibility(runtime, d, requester="alice", tenant="acme")
    return caught.value.code


# -- 1. the policy file -------------------------------------------------------------------


def test_a_policy_carries_inference_grants_through_file_store_and_view(runtime: Runtime) -> None:
    policy = InterventionPolicy.from_toml(policy_text(DECIDER, PLANNER))
    expected = (
        InferenceGrant(
            boundary="decider",
            endpoint="local",
            model="r1",
            caps=InferenceCaps(**CAPS),
            vary=("seed",),
        ),
        InferenceGrant(
            boundary="planner-model",
            endpoint="local",
            model="planner-r5",
            caps=InferenceCaps(**CAPS),
        ),
    )
    assert policy.inference == expected
    assert InterventionPolicy.from_row(policy.to_row()) == policy
    stored = load_policy(runtime, policy, now=T0)
    assert get_policy(runtime, stored.id).inference == expected
    shown = stored.to_dict()["params"]["inference"]
    assert shown == [g.to_dict() for g in expected]
    # the policy's ledger record names what it authorises, grants included
    body = runtime.ledger.entries(kind="policy.draft")[-1].body
    assert body["inference"] == shown
    # a policy without grants shows and stores none
    plain = InterventionPolicy.from_toml(policy_text())
    assert plain.inference == () and "inference" not in plain.to_dict()["params"]
    assert InterventionPolicy.from_row(plain.to_row()).inference == ()


@pytest.mark.parametrize(
    ("grants", "changes", "secret"),
    [
        ((), {"inference": "decider"}, "decider"),  # not tables
        (({**DECIDER, "model": "Secret Model!"},), {}, "Secret Model"),
        (({**DECIDER, "endpoint": "HTTP://secret-host"},), {}, "secret-host"),
        (({**DECIDER, "boundary": "main/decider#0"},), {}, "main/decider#0"),
        (({**DECIDER, "vary": ["colour-secret"]},), {}, "colour-secret"),
        (({**DECIDER, "colour": "secret-blue"},), {}, "secret-blue"),
        (({**DECIDER, "caps": None},), {}, "r1"),  # no caps
        (({**DECIDER, "caps": {**CAPS, "calls": -77}},), {}, "-77"),
        (({**DECIDER, "caps": {**CAPS, "extra_secret": 1}},), {}, "extra_secret"),
        ((DECIDER, {**DECIDER, "model": "r1-secret"}), {}, "r1-secret"),  # one boundary twice
    ],
)
def test_invalid_grants_are_refused_in_one_line_naming_the_key(
    grants: tuple[dict[str, Any], ...], changes: dict[str, Any], secret: str
) -> None:
    with pytest.raises(BadInput) as caught:
        InterventionPolicy.from_toml(policy_text(*grants, **changes))
    message = str(caught.value)
    assert "inference" in message and "\n" not in message
    assert secret not in message


def test_a_stored_grant_that_no_longer_parses_is_refused() -> None:
    row = InterventionPolicy.from_toml(policy_text(DECIDER)).to_row()
    params = json.loads(row["params_json"])
    params["inference"][0]["caps"]["calls"] = 0
    with pytest.raises(BadInput):
        InterventionPolicy.from_row({**row, "params_json": json.dumps(params)})


# -- 2. eligibility -----------------------------------------------------------------------


def test_an_eligible_request_carries_the_policys_grants(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    policy = active(runtime, policy_text(DECIDER))
    eligible = check_eligibility(
        runtime, draft(captured["procurement"]), requester="alice", tenant="acme"
    )
    assert eligible.request.inference == policy.inference
    assert eligible.request.to_dict()["inference"] == [policy.inference[0].to_dict()]


def test_a_grant_of_a_boundary_the_specimen_did_not_record_is_refused(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    # the agent declares the decider (the policy validates); this run never crossed it
    record = runtime.ledger.get_specimen(captured["procurement"])
    steps = tuple(
        s._replace(name="decider-then", call_id=s.call_id.replace("decider", "decider-then"))
        if s.name == "decider"
        else s
        for s in record.steps
    )
    specimen = reseal(runtime, captured["procurement"], "sp-no-decider", steps=steps)
    active(runtime, policy_text(DECIDER))
    assert refusal(runtime, draft(specimen)) == "inference_boundary_unknown"


def test_a_grant_pinning_another_model_than_the_recorded_one_is_refused(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    # the decider's recorded answers carry the identity r1 (declared: in clear)
    active(runtime, policy_text({**DECIDER, "model": "r2"}))
    assert refusal(runtime, draft(captured["procurement"])) == "inference_not_pinned"


def test_an_identity_held_only_in_ciphertext_is_left_to_the_supervisor(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    """A recorded answer whose identity the ledger holds as a keyed digest (or not at
    all) cannot be compared without decrypting: eligibility admits the grant and the
    supervisor checks it (``inference_not_pinned`` in the broker)."""
    record = runtime.ledger.get_specimen(captured["procurement"])
    sealed = "hmac-sha256:" + "ab" * 32
    steps = tuple(
        s._replace(resolved=sealed if s.seq % 2 else None) if s.name == "decider" else s
        for s in record.steps
    )
    reseal(runtime, captured["procurement"], "sp-sealed-identity", steps=steps)
    policy = active(runtime, policy_text({**DECIDER, "model": "r2"}))
    eligible = check_eligibility(
        runtime, draft("sp-sealed-identity"), requester="alice", tenant="acme"
    )
    assert eligible.request.inference == policy.inference


# -- 3. the classification of what inference would send, and Cedar ------------------------


def test_the_inference_classification_is_the_highest_of_the_governed_boundaries_fields(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    procurement = runtime.ledger.get_specimen(captured["procurement"])
    shard = runtime.ledger.get_specimen(captured["shard-maintenance"])
    decider = InterventionPolicy.from_toml(policy_text(DECIDER)).inference
    planner = InterventionPolicy.from_toml(policy_text(PLANNER)).inference
    # the decider's fields are at most confidential; the planner's task is restricted
    assert inference_classification(procurement, decider) is Classification.CONFIDENTIAL
    assert inference_classification(shard, planner) is Classification.RESTRICTED
    assert inference_classification(procurement, ()) is None
    # the specimen as a whole is restricted: the decider's share is what counts
    assert procurement.highest_classification is Classification.RESTRICTED


@pytest.fixture(scope="module")
def access() -> AccessPolicy:
    return AccessPolicy.load()


CLEARED = Analyst(
    name="p", tenant="acme", roles=("auditor", "restricted-clearance"), created_at="x"
)
RESTRICTED_SPECIMEN = Resource(
    kind="Specimen", id="sp-1", tenant="acme", classification="restricted"
)


@pytest.mark.parametrize(
    ("purpose", "inference", "expected"),
    [
        ("review", Classification.RESTRICTED, "inference_purpose_not_allowed"),
        (PERMITTING, Classification.RESTRICTED, "allowed"),
        ("review", Classification.CONFIDENTIAL, "allowed"),
        ("review", None, "allowed"),  # no inference asked
        ("", Classification.RESTRICTED, "purpose_required"),
    ],
)
def test_restricted_content_goes_to_the_provider_only_for_a_permitting_purpose(
    access: AccessPolicy, purpose: str, inference: Classification | None, expected: str
) -> None:
    decision = access.authorize(
        CLEARED,
        Action.REQUEST_AUDIT,
        RESTRICTED_SPECIMEN,
        purpose=purpose,
        now=T0,
        inference=inference,
    )
    assert decision.code == expected and decision.allowed is (expected == "allowed")


def test_a_remembered_decision_is_never_reused_for_another_inference_context() -> None:
    access = AccessPolicy.load()
    ask = {"purpose": "review", "now": T0}
    plain = access.authorize(CLEARED, Action.REQUEST_AUDIT, RESTRICTED_SPECIMEN, **ask)
    assert plain.allowed
    flowing = access.authorize(
        CLEARED,
        Action.REQUEST_AUDIT,
        RESTRICTED_SPECIMEN,
        inference=Classification.RESTRICTED,
        **ask,
    )
    assert flowing.code == "inference_purpose_not_allowed"
    again = access.authorize(CLEARED, Action.REQUEST_AUDIT, RESTRICTED_SPECIMEN, **ask)
    assert again.allowed


@pytest.mark.parametrize("boundary", ["oracle", "supplier-docs", "supplier_risk"])
def test_validation_refuses_a_grant_of_no_model_boundary_the_agent_declares(
    runtime: Runtime, boundary: str
) -> None:
    """A grant opens a model boundary: one the tool's agent does not declare, or declares
    as a retrieval or a tool, fails validation, naming the grant's position."""
    grants = (DECIDER, {**PLANNER, "boundary": boundary})
    policy = load_policy(runtime, InterventionPolicy.from_toml(policy_text(*grants)), now=T0)
    report = validate_policy(runtime, policy.id, now=T0)
    assert not report.ok
    assert report.problems == ("inference_boundary_unknown:inference[1]",)
