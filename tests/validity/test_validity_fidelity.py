"""Substitute fidelity through the whole pipeline: in the enclave, every declared
substitute is run on its recorded requests before any sample; one that does not
reproduce the record serves nothing, and the certificate lists each boundary's result.

Known answer (``tests/agents/validity_engine_agents``): model revision r2 is r1 redeployed, so
swapping it changes nothing live; the stale table the substitute serves would have
manufactured an effect.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.certificates import RuntimeLedgerLookup, signing_key
from enclave.replay.runs import open_specimen
from ledger.certificates import verify_certificate
from tests.agents import validity_engine_agents as va
from tests.agents import validity_substitute_agents as vs

pytestmark = pytest.mark.slow


def _revision_audit(runtime: Runtime, agent: AgentSpec) -> Any:
    with va.live():
        specimen = capture(runtime, agent, {"key": "K-7", "path": ""}, tenant_id="acme", seed=5)
    request = AuditRequest(
        specimen_id=specimen.specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="model-change-review",
        requester="test",
        samples=8,
        seed=1,
    )
    return run_audit(runtime, request, now=datetime.now(UTC) + timedelta(hours=1))


def _predicate(runtime: Runtime, envelope: dict[str, Any]) -> dict[str, Any]:
    key = signing_key(runtime).public_key
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    assert report.ok, report.to_dict()
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def test_a_stale_substitute_cannot_manufacture_a_certified_effect(runtime: Runtime) -> None:
    outcome = _revision_audit(runtime, va.STALE_SUBSTITUTE_AGENT)
    # before the check, this audit certified an effect that running the agent live denies
    assert outcome.classification == "failed", outcome.classification
    assert outcome.failure == "unservable" and outcome.envelope is None


def test_a_faithful_substitute_serves_and_the_certificate_lists_it(runtime: Runtime) -> None:
    outcome = _revision_audit(runtime, va.TWICE_AGENT)
    assert outcome.envelope is not None, (outcome.failure, outcome.failure_detail)
    predicate = _predicate(runtime, outcome.envelope)
    assert predicate["substitute_fidelity"] == {"oracle": {"checked": 2, "faithful": True}}
    rows = {(r["arm"], r["calls"]): r for r in predicate["served_by"]}
    # the revision point's calls are the swap (the substitute with r2): the intervened
    # arm's recorded calls are served by the intervention, the baseline's by the record
    assert rows[("intervened", "recorded")]["intervention"] != "none"
    assert rows[("baseline", "recorded")]["intervention"] == "none"


@pytest.mark.parametrize(
    "fidelity",
    [
        {"oracle": {"checked": 2**40, "faithful": True}},  # a count of the agent's choosing
        {"oracle": {"checked": 1, "faithful": True}},  # not the record's count
        {},  # a boundary left out
        {"oracle": {"checked": 2, "faithful": True}, "scorer": {"checked": 1, "faithful": True}},
        {"oracle": {"checked": 2, "faithful": 1}},
    ],
)
def test_a_fidelity_report_carries_one_bit_per_boundary_and_nothing_chosen(
    fidelity: dict[str, Any],
) -> None:
    # what a run's process sends is agent-influenced: only the faithful bit is kept, the
    # boundaries and counts must be the supervisor's own
    from enclave.replay.reply import ReplyInvalid, parse_loaded

    loaded = ["baseline", "intervened", "placebo"]
    expected = {"oracle": 2}
    good = {"oracle": {"checked": 2, "faithful": False}}
    assert parse_loaded({"loaded": loaded, "fidelity": good}, expected) == good
    with pytest.raises(ReplyInvalid):
        parse_loaded({"loaded": loaded, "fidelity": fidelity}, expected)


# -- a substitute faithful on the record, asked what the record does not hold -----------

EXTRAPOLATED_SAMPLES = 60  # enough for 0 flips to be "equivalent" at the default tolerance


def _extrapolated_audit(runtime: Runtime, authoritative: tuple[str, ...] = ()) -> Any:
    with vs.live():
        specimen = capture(
            runtime,
            vs.EXTRAPOLATED_AGENT,
            vs.INPUTS,
            tenant_id="acme",
            seed=vs.RECORDED_SEED,
        )
    request = AuditRequest(
        specimen_id=specimen.specimen_id,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
        ),
        purpose="routing-review",
        requester="test",
        samples=EXTRAPOLATED_SAMPLES,
        seed=1,
        authoritative_substitutes=authoritative,
    )
    return run_audit(runtime, request, now=datetime.now(UTC) + timedelta(hours=1))


def _live_decision(runtime: Runtime, seed: int, value: float | None) -> Any:
    with vs.live(value=value):
        specimen = capture(runtime, vs.EXTRAPOLATED_AGENT, vs.INPUTS, tenant_id="acme", seed=seed)
    opened = open_specimen(
        runtime,
        specimen.specimen_id,
        job_id="validity-fidelity",
        lease_seconds=60,
        now=datetime.now(UTC) + timedelta(minutes=5),
    )
    return opened.trajectory.outcome["decision"]


def test_a_conclusion_resting_on_a_substitutes_extrapolation_is_not_confident(
    runtime: Runtime,
) -> None:
    # the truth: the agent run live with the intervention applied, per sampled seed
    seeds = range(1, 1 + EXTRAPOLATED_SAMPLES)
    truth = sum(_live_decision(runtime, s, None) != _live_decision(runtime, s, 0.2) for s in seeds)
    assert 0.3 < truth / EXTRAPOLATED_SAMPLES < 0.7  # about half the seeds flip live

    outcome = _extrapolated_audit(runtime)
    assert outcome.envelope is not None, (outcome.failure, outcome.failure_detail)
    predicate = _predicate(runtime, outcome.envelope)
    # the substitute reproduced the record, so it served; its answer to band "low" is
    # not the live one, and no flip is seen where half the seeds flip
    assert predicate["substitute_fidelity"] == {"rating": {"checked": 1, "faithful": True}}
    assert predicate["effect"]["flips"] == 0
    # so the audit may not certify "equivalent", and says what it rests on
    assert predicate["classification"] == "inconclusive"
    assert predicate["substitute_answers"] == {
        "boundaries": ["rating"],
        "samples": EXTRAPOLATED_SAMPLES,
    }
    assert any(
        "'rating'" in item and f"{EXTRAPOLATED_SAMPLES} of {EXTRAPOLATED_SAMPLES}" in item
        for item in predicate["not_established"]
    ), predicate["not_established"]
    # the served-by table cannot tell it apart: the changed request keeps the recorded
    # call id, so it shows as a substitute on a recorded call, as a changed world would
    rows = {(r["arm"], r["calls"]): r for r in predicate["served_by"]}
    assert [rows[(arm, "recorded")]["substitute"] for arm in ("baseline", "placebo")] == [
        "none",
        "none",
    ]
    assert rows[("intervened", "recorded")]["substitute"] != "none"
    assert predicate["substituted"] == ["rating"]
    assert not [r for r in predicate["served_by"] if r["calls"] == "new"]


def test_a_substitute_declared_authoritative_carries_the_conclusion(runtime: Runtime) -> None:
    # the declaration is the request's (an intervention policy's) claim that the
    # substitute is the service: the audit then concludes from it, and says so
    outcome = _extrapolated_audit(runtime, authoritative=("rating",))
    assert outcome.envelope is not None, (outcome.failure, outcome.failure_detail)
    predicate = _predicate(runtime, outcome.envelope)
    assert predicate["request"]["authoritative_substitutes"] == ["rating"]
    assert predicate["classification"] == "equivalent"
    assert any(
        "'rating'" in item and "authoritative" in item for item in predicate["not_established"]
    )
