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
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.certificates import RuntimeLedgerLookup, signing_key
from ledger.certificates import load_public_key_pem, verify_certificate
from tests.agents import validity_engine_agents as va

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("fidelity") / "home"))
    yield rt
    rt.close()


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
    key = load_public_key_pem(signing_key(runtime).public_key_pem)
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
    intervened = [r for r in predicate["served_by"] if r["arm"] == "intervened"]
    # both calls of the revision point, in every sample: the swap (the substitute with r2)
    oracle = [r for r in intervened if r["call"].startswith("main/oracle#")]
    assert [r["intervention"] for r in oracle] == [8, 8]


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
