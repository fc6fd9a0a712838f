"""regress over a tagged library through the durable queue, the signed release report,
its verification, the gate and JUnit output."""

from __future__ import annotations

import base64
import copy
import inspect
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import capture
from enclave.incidents import procurement
from enclave.release import (
    RegressPlan,
    Selector,
    junit_xml,
    regress,
    select,
    tag_specimen,
    verify_report,
)
from enclave.replay import CandidateCode
from enclave.replay.certificates import RuntimeLedgerLookup
from ledger import certificates_by_digest
from ledger.certificates import load_public_key_pem
from tests.agents.candidates import write_candidate
from tests.support.canary import INCIDENT_CANARIES, find_canaries

SAMPLES = 100


def _candidate(root: Path, name: str, body: str) -> CandidateCode:
    folder = root / name
    folder.mkdir()
    return write_candidate(folder, name, body)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("regress") / "home"))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def library(runtime: Runtime) -> dict[str, str]:
    base = procurement.BASELINE_INPUT
    now = datetime.now(UTC)
    held = capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
    ).specimen_id
    other = capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=7
    ).specimen_id
    tag_specimen(runtime, held, ["release-gate/po", "must-hold"], now=now)
    tag_specimen(runtime, other, ["release-gate/po"], now=now)
    return {"held": held, "other": other}


def _run(runtime: Runtime, candidate: CandidateCode) -> tuple[dict[str, Any], bool]:
    selection = select(runtime, Selector(tags=("release-gate/po",)))
    plan = RegressPlan(
        samples=SAMPLES,
        purpose="release-gate",
        requester="ci",
        candidate=candidate,
        must_hold=("must-hold",),
        authoritative_substitutes=("approval-policy",),  # as the shipped policies declare
    )
    return regress(runtime, selection, plan, now=datetime.now(UTC), local=True)


def _predicate(envelope: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement["predicate"]


def _verify(runtime: Runtime, envelope: dict[str, Any]) -> list[tuple[str, bool, str]]:
    key = load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())
    return verify_report(
        envelope,
        public_key=key,
        certificate_source=partial(certificates_by_digest, runtime.ledger.engine),
        ledger_lookup=RuntimeLedgerLookup(runtime.ledger),
    )


def test_a_decision_changing_candidate_fails_the_gate_naming_the_specimen(
    runtime: Runtime, library: dict[str, str], tmp_path: Path
) -> None:
    body = inspect.getsource(procurement.run).replace("+ jitter\n", "+ jitter\n        - 0.02\n")
    candidate = _candidate(tmp_path, "procurement_next", body)
    envelope, passed = _run(runtime, candidate)
    predicate = _predicate(envelope)
    assert passed is False
    assert predicate["gate"] == {"passed": False, "failing": [library["held"]]}
    rows = {r["specimen"]: r for r in predicate["specimens"]}
    assert set(rows) == set(library.values())
    assert rows[library["held"]]["label"] == "decision-changed"
    # tight: one of eight outcomes per row, nothing else the candidate chose
    assert predicate["disclosure"] == {"bits_per_specimen": 3, "bits": 3 * len(rows)}
    assert set(rows[library["held"]]) == {
        "specimen",
        "audit",
        "certificate",
        "label",
        "reason",
        "sealed",
        "must_hold",
    }
    assert predicate["intervention"] == {
        "strategy": "CODE",
        "target": "procurement_next:AGENT",
        "digest": candidate.digest,
    }
    assert (
        len(predicate["baseline_code"]) == 1 and predicate["baseline_code"][0] != candidate.digest
    )
    assert all(r["certificate"] for r in rows.values())
    checks = _verify(runtime, envelope)
    assert all(ok for _, ok, _ in checks), checks
    # JUnit: one testcase per specimen; the held one fails with its label, no content
    xml = junit_xml(predicate)
    root = ET.fromstring(xml)  # noqa: S314 - our own output
    cases = root.findall("./testsuite/testcase")
    assert {c.get("name") for c in cases} == set(library.values())
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == [library["held"]]
    assert failed[0].find("failure").get("message") == "decision-changed"  # type: ignore[union-attr]
    assert find_canaries(xml + json.dumps(envelope).encode(), INCIDENT_CANARIES) == []
    # a report with a member dropped, or re-signed rows, does not verify
    statement = json.loads(base64.b64decode(envelope["payload"]))
    dropped = copy.deepcopy(statement)
    dropped["predicate"]["specimens"] = [
        r for r in dropped["predicate"]["specimens"] if r["specimen"] != library["held"]
    ]
    forged = dict(envelope, payload=base64.b64encode(json.dumps(dropped).encode()).decode())
    assert not all(ok for _, ok, _ in _verify(runtime, forged))


def test_an_equivalent_candidate_passes_the_gate(
    runtime: Runtime, library: dict[str, str], tmp_path: Path
) -> None:
    body = "# reformatted\n\n" + inspect.getsource(procurement.run).replace(
        "    jitter = ", "\n    jitter = "
    )
    envelope, passed = _run(runtime, _candidate(tmp_path, "procurement_same", body))
    predicate = _predicate(envelope)
    assert passed is True, predicate["specimens"]
    assert {r["label"] for r in predicate["specimens"]} == {"equivalent"}
    assert predicate["totals"]["equivalent"] == 2
    assert all(ok for _, ok, _ in _verify(runtime, envelope))
    # signed by the right key but naming another candidate: its certificates are not
    # of that candidate, and verification says so
    from enclave.release import sign_report
    from enclave.replay.certificates import signing_key

    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["intervention"]["digest"] = "sha256:" + "0" * 64
    resigned = sign_report(statement, signing_key(runtime))
    checks = dict((name, ok) for name, ok, _ in _verify(runtime, resigned))
    assert checks["signature and statement"] is True
    assert checks["certificates"] is False
    # signed by the right key, true in every figure, but never recorded in the ledger
    # (issued a second later): it is not the report the ledger holds
    statement = json.loads(base64.b64decode(envelope["payload"]))
    issued = datetime.fromisoformat(statement["predicate"]["issued_at"])
    statement["predicate"]["issued_at"] = (issued + timedelta(seconds=1)).isoformat()
    unrecorded = sign_report(statement, signing_key(runtime))
    checks = dict((name, ok) for name, ok, _ in _verify(runtime, unrecorded))
    assert checks.pop("ledger entry") is False
    assert all(checks.values()), checks  # everything else about it holds
    recorded = dict((name, ok) for name, ok, _ in _verify(runtime, envelope))
    assert recorded["ledger entry"] is True


def test_a_member_the_candidate_cannot_audit_is_named_and_fails_the_gate(
    runtime: Runtime, tmp_path: Path
) -> None:
    from enclave.incidents import claims

    base = claims.BASELINE_INPUT
    other = capture(
        runtime, claims.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
    ).specimen_id
    tag_specimen(runtime, other, ["claims-lib", "must-hold"], now=datetime.now(UTC))
    # a procurement candidate is not a revision of the claims agent: fail closed
    candidate = _candidate(tmp_path, "procurement_for_claims", inspect.getsource(procurement.run))
    plan = RegressPlan(
        samples=10,
        purpose="release-gate",
        requester="ci",
        candidate=candidate,
        must_hold=("must-hold",),
    )
    envelope, passed = regress(
        runtime,
        select(runtime, Selector(tags=("claims-lib",))),
        plan,
        now=datetime.now(UTC),
        local=True,
    )
    predicate = _predicate(envelope)
    assert passed is False
    (row,) = predicate["specimens"]
    assert row["specimen"] == other and row["label"] == "not-auditable"
    # the audit's own failure code stays in its record; the report says it failed
    assert row["certificate"] is None and row["reason"] == "failed"
    assert predicate["totals"]["not-auditable"] == 1
    assert all(ok for _, ok, _ in _verify(runtime, envelope))
    assert find_canaries(json.dumps(envelope).encode(), INCIDENT_CANARIES) == []


def test_a_member_that_reads_live_state_is_not_auditable_and_names_its_sealed_cut(
    runtime: Runtime, tmp_path: Path
) -> None:
    from enclave.incidents import shard

    base = shard.BASELINE_INPUT
    specimen = capture(
        runtime, shard.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
    ).specimen_id
    tag_specimen(runtime, specimen, ["shard-lib"], now=datetime.now(UTC))
    folder = tmp_path / "shard_next"
    folder.mkdir()
    (folder / "shard_next.py").write_text(
        "from dataclasses import replace\n"
        "from enclave.incidents.shard import AGENT as _CAPTURED\n"
        "def run(ctx, inputs):\n"
        "    return _CAPTURED.function(ctx, inputs)\n"
        "AGENT = replace(_CAPTURED, function=run)\n"
    )
    plan = RegressPlan(
        samples=10,
        purpose="release-gate",
        requester="ci",
        candidate=CandidateCode.declare("shard_next:AGENT", folder),
        must_hold=("*",),
    )
    envelope, passed = regress(
        runtime,
        select(runtime, Selector(tags=("shard-lib",))),
        plan,
        now=datetime.now(UTC),
        local=True,
    )
    (row,) = _predicate(envelope)["specimens"]
    assert passed is False
    # the shard specimen is sealed not-auditable-beyond its cut (an irreversible drop with
    # no dry-run substitute): the row says so beside the audit's own class
    assert (row["label"], row["reason"]) == ("not-auditable", "observable-only")
    assert row["sealed"] == "not-auditable-beyond before-drop"
    assert row["certificate"] is not None  # observable-only is certified, not concluded
    assert all(ok for _, ok, _ in _verify(runtime, envelope))
