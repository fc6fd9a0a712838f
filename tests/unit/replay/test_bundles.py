"""A bundle of several fields is allowed only when the boundary declares it, and is
reported as one intervention whose declared changes list every field."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from enclave import BadInput, Home, Refused, Runtime, utc_now
from enclave.capture import capture
from enclave.incidents import procurement
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import apply_intervention, open_specimen

CALL = "main/supplier_risk#0"


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    rt = Runtime.open(Home.init(tmp_path / "home"), env={})
    yield rt
    rt.close()


@pytest.fixture
def specimen(runtime: Runtime) -> str:
    base = procurement.BASELINE_INPUT
    return capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id="acme", seed=41
    ).specimen_id


def _apply(runtime: Runtime, specimen: str, intervention: Intervention):  # type: ignore[no-untyped-def]
    opened = open_specimen(runtime, specimen, job_id="job-1", lease_seconds=60, now=utc_now())
    return apply_intervention(
        opened.trajectory,
        intervention,
        agent=procurement.AGENT,
        digester=runtime.digests.for_tenant("acme"),
    )


def test_declared_bundle_changes_exactly_its_fields(runtime: Runtime, specimen: str) -> None:
    iv = Intervention(
        Strategy.REPLACE,
        call_id=CALL,
        bundle="assessment",
        value={"confidence": 0.56, "analyst_note": "cleared"},
    )
    applied = _apply(runtime, specimen, iv)
    assert applied.declared_changes == (
        f"{CALL}#response/confidence",
        f"{CALL}#response/analyst_note",
    )
    assert sorted(applied.actual_changes) == sorted(applied.declared_changes)
    assert applied.unchanged_digest_equal


def test_bundle_audit_is_reported_as_one(runtime: Runtime, specimen: str) -> None:
    iv = Intervention(
        Strategy.REPLACE,
        call_id=CALL,
        bundle="assessment",
        value={"confidence": 0.56, "analyst_note": "cleared"},
    )
    request = AuditRequest(
        specimen_id=specimen, intervention=iv, purpose="bundle review", requester="t", samples=4
    )
    outcome = run_audit(runtime, request, now=utc_now())
    assert outcome.envelope is not None
    envelope = outcome.envelope
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["intervention"]["target"] == {"call_id": CALL, "field": "bundle:assessment"}
    assert len(predicate["intervention"]["declared_changes"]) == 2
    assert "cleared" not in json.dumps(predicate)  # values are digested, never shown


def test_undeclared_bundle_or_partial_values_are_refused(runtime: Runtime, specimen: str) -> None:
    with pytest.raises(Refused) as info:
        _apply(runtime, specimen, Intervention(Strategy.NULLIFY, call_id=CALL, bundle="everything"))
    assert info.value.code == "undeclared_bundle"
    with pytest.raises(BadInput):
        _apply(
            runtime,
            specimen,
            Intervention(
                Strategy.REPLACE, call_id=CALL, bundle="assessment", value={"confidence": 0.56}
            ),
        )
    with pytest.raises(BadInput):
        Intervention(
            Strategy.REPLACE, call_id=CALL, bundle="assessment", field="/confidence", value={}
        )
