"""Release reports on the analyst's side: the service routes the extension lets through,
and the offline verifier on a real signed report (``tests/golden/release_report.*``,
written by ``scripts/export-release-report.py``) and on reports tampered then re-signed,
so that the shape rules, not the signature, are what fails."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import enclave.release as enclave_report
from enclave.release import selection_digest as enclave_selection_digest
from enclave.release import verify_report
from jupyter_ext import (
    LABELS,
    REASONS,
    REPORT_TYPE,
    REPORT_TYPE_V1,
    EnclaveClient,
    ServiceRefused,
    clean_query,
    match_route,
    report_problems,
    selection_digest,
    verify_envelope_offline,
    verify_file,
)
from ledger.certificates import load_public_key_pem

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
REPORT = GOLDEN / "release_report.dsse.json"
REPORT_KEY = GOLDEN / "release_report.pub.pem"
# a v1 report (before reports were tight): still verifiable
REPORT_V1 = GOLDEN / "release_report_v1.dsse.json"
REPORT_V1_KEY = GOLDEN / "release_report_v1.pub.pem"


def _statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def _sign(statement: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    payload = rfc8785.dumps(statement)
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %b %d %b" % (len(ptype), ptype, len(payload), payload)
    return {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": ptype.decode(),
        "signatures": [{"sig": base64.b64encode(key.sign(pae)).decode()}],
    }


def _keyid(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


# -- routes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("reports", "reports"),
        ("reports/rr-0123456789abcdef", "report"),
        ("reports/rr-0123456789abcdef/summary", "report_summary"),
    ],
)
def test_report_routes_are_known(path: str, name: str) -> None:
    route = match_route("GET", path)
    assert route is not None and route.name == name


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "reports"),
        ("GET", "reports/rr-1/verify"),
        ("GET", "reports/../keys"),
        ("GET", "reports/rr-1/summary/x"),
        ("DELETE", "reports/rr-1"),
    ],
)
def test_other_report_paths_are_refused(method: str, path: str) -> None:
    assert match_route(method, path) is None


def test_the_report_list_takes_only_limit_and_cursor() -> None:
    route = match_route("GET", "reports")
    assert route is not None
    query = {"limit": "5", "cursor": "c1", "tenant": "globex", "gate_passed": "true"}
    assert clean_query(route, query) == {"limit": "5", "cursor": "c1"}


# -- the shape is the enclave's ---------------------------------------------------------


def test_vocabulary_and_digest_are_the_enclaves() -> None:
    assert LABELS == enclave_report.LABELS
    assert REASONS == enclave_report.REASONS
    assert REPORT_TYPE == enclave_report.REPORT_TYPE
    assert REPORT_TYPE_V1 == enclave_report.REPORT_TYPE_V1
    ids, erased = ["sp-b", "sp-a"], ["sp-z"]
    assert selection_digest(ids, erased) == enclave_selection_digest(ids, erased)


def test_a_report_the_enclave_builds_has_no_problems() -> None:
    rows = [
        enclave_report.SpecimenResult(
            "sp-b", "au-2", "sha256:" + "1" * 64, "equivalent", None, None, True
        ),
        enclave_report.SpecimenResult("sp-a", "au-1", None, "not-auditable", "failed", None, True),
        enclave_report.SpecimenResult(
            "sp-d", None, None, "not-auditable", "refused", "not-auditable-beyond x", False
        ),
    ]
    statement = enclave_report.build_report(
        selector={"tags": ["t"]},
        selection_digest=enclave_selection_digest(["sp-a", "sp-b", "sp-d"], ["sp-c"]),
        erased=["sp-c"],
        intervention={"strategy": "REVISION", "revision": "model=r2"},
        baseline_code=["sha256:" + "2" * 64],
        must_hold=["must-hold"],
        samples=10,
        results=rows,
        issued_at="2026-12-01T00:00:00+00:00",
        issuer="sha256:" + "3" * 64,
    )
    subject = statement["subject"][0]["digest"]["sha256"]
    assert report_problems(statement["predicate"], subject) == []
    assert statement["predicate"]["disclosure"] == {"bits_per_specimen": 3, "bits": 9}


def test_a_row_outside_the_eight_outcomes_cannot_be_built() -> None:
    # a free-text reason would carry whatever the code under audit chose
    with pytest.raises(ValueError, match="not an outcome"):
        enclave_report.SpecimenResult(
            "sp-a", "au-1", None, "not-auditable", "agent says: 42", None, True
        )
    with pytest.raises(ValueError, match="not an outcome"):
        enclave_report.SpecimenResult("sp-a", "au-1", None, "equivalent", "failed", None, True)


def test_the_committed_report_is_one_the_enclave_verifies() -> None:
    # its certificates are not committed; the rest of the enclave's own checks pass
    envelope = json.loads(REPORT.read_text())
    checks = verify_report(
        envelope,
        public_key=load_public_key_pem(REPORT_KEY.read_bytes()),
        certificates_dir=GOLDEN,
        ledger_lookup=None,
    )
    by_name = {name: ok for name, ok, _ in checks}
    assert by_name == {
        "signature and statement": True,
        "selection digest": True,
        "certificates": False,
        "totals and gate": True,
        "ledger entry": False,  # no ledger given: nothing shows the report was recorded
    }


# -- offline verification ------------------------------------------------------------


def test_the_golden_report_verifies_offline() -> None:
    report = verify_file(str(REPORT), str(REPORT_KEY))
    assert report.ok, report.checks
    assert [c.name for c in report.checks] == ["envelope", "signature", "statement", "predicate"]
    assert "release report v2" in report.checks[2].detail
    assert "release-selection" in report.checks[2].detail
    assert "totals, gate and bound recomputed" in report.checks[3].detail


def test_a_v1_report_still_verifies_offline() -> None:
    report = verify_file(str(REPORT_V1), str(REPORT_V1_KEY))
    assert report.ok, report.checks
    assert "release report v1" in report.checks[2].detail
    assert "totals and gate recomputed" in report.checks[3].detail
    # and by the enclave's own checks, but for what needs its home
    checks = verify_report(
        json.loads(REPORT_V1.read_text()),
        public_key=load_public_key_pem(REPORT_V1_KEY.read_bytes()),
        certificates_dir=GOLDEN,
        ledger_lookup=None,
    )
    assert [(name, ok) for name, ok, _ in checks] == [
        ("signature and statement", True),
        ("selection digest", True),
        ("certificates", False),
        ("totals and gate", True),
        ("ledger entry", False),
    ]


def test_v1_rows_under_the_v2_type_fail_the_shape() -> None:
    key = Ed25519PrivateKey.generate()
    statement = _statement_of(json.loads(REPORT_V1.read_text()))
    statement["predicate"]["issuer"] = _keyid(key)
    statement["predicateType"] = REPORT_TYPE
    report = verify_envelope_offline(_sign(statement, key), key.public_key())
    failed = next(c for c in report.checks if not c.ok)
    assert (failed.name, failed.detail) == (
        "predicate",
        "/predicate: must have exactly the release report v2 keys",
    )


def test_a_byte_changed_report_fails_its_signature() -> None:
    envelope = json.loads(REPORT.read_text())
    payload = base64.b64decode(envelope["payload"])
    tampered = dict(
        envelope,
        payload=base64.b64encode(payload.replace(b'"passed":false', b'"passed":true ')).decode(),
    )
    assert payload != base64.b64decode(tampered["payload"])
    key = load_public_key_pem(REPORT_KEY.read_bytes())
    report = verify_envelope_offline(tampered, key)
    assert not report.ok
    assert [c.name for c in report.checks if not c.ok][0] == "signature"


Edit = Callable[[dict[str, Any]], None]


def _row(index: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda s: s["predicate"]["specimens"][index]


def _set_label(s: dict[str, Any]) -> None:
    row = next(r for r in s["predicate"]["specimens"] if r["label"] == "decision-changed")
    row["label"] = "equivalent"  # totals no longer follow


def _hide_failure(s: dict[str, Any]) -> None:
    s["predicate"]["gate"] = {"passed": True, "failing": []}


def _drop_row(s: dict[str, Any]) -> None:
    # a member quietly dropped: totals fixed up, but the selection digest is the old one
    p = s["predicate"]
    dropped = next(r for r in p["specimens"] if not r["must_hold"])
    p["specimens"].remove(dropped)
    p["totals"][dropped["label"]] -= 1
    p["totals"]["specimens"] -= 1


def _foreign_label(s: dict[str, Any]) -> None:
    s["predicate"]["specimens"][0]["label"] = "fine"


def _reasonless(s: dict[str, Any]) -> None:
    row = next(r for r in s["predicate"]["specimens"] if r["label"] == "not-auditable")
    row["reason"] = None


def _free_reason(s: dict[str, Any]) -> None:
    # a reason is one of four words, never text the code under audit could choose
    row = next(r for r in s["predicate"]["specimens"] if r["label"] == "not-auditable")
    row["reason"] = "ship it"


def _listed_layers(s: dict[str, Any]) -> None:
    s["predicate"]["specimens"][0]["layers_changed"] = ["decision"]


def _smaller_bound(s: dict[str, Any]) -> None:
    s["predicate"]["disclosure"]["bits"] -= 1


def _uncertified_change(s: dict[str, Any]) -> None:
    row = next(r for r in s["predicate"]["specimens"] if r["label"] == "decision-changed")
    row["certificate"] = None


def _audit_of_refused(s: dict[str, Any]) -> None:
    row = next(r for r in s["predicate"]["specimens"] if r["label"] == "not-auditable")
    row["reason"] = "refused"  # but it names an audit


def _free_sealed(s: dict[str, Any]) -> None:
    s["predicate"]["specimens"][0]["sealed"] = "ship it"


def _subject_name(s: dict[str, Any]) -> None:
    s["subject"][0]["name"] = "specimen:sp-1"


def _subject_digest(s: dict[str, Any]) -> None:
    s["subject"][0]["digest"]["sha256"] = "0" * 64


def _extra_key(s: dict[str, Any]) -> None:
    s["predicate"]["verdict"] = "ship it"


def _string_totals(s: dict[str, Any]) -> None:
    totals = s["predicate"]["totals"]
    totals["specimens"] = str(totals["specimens"])


@pytest.mark.parametrize(
    ("edit", "step", "location"),
    [
        (_set_label, "predicate", "/predicate/totals"),
        (_hide_failure, "predicate", "/predicate/gate"),
        (_drop_row, "predicate", "/predicate/selection_digest"),
        (_foreign_label, "predicate", "/predicate/specimens/0/label"),
        (_reasonless, "predicate", "/predicate/specimens/"),
        (_free_reason, "predicate", "/predicate/specimens/"),
        (_listed_layers, "predicate", "/predicate/specimens/0:"),
        (_smaller_bound, "predicate", "/predicate/disclosure"),
        (_uncertified_change, "predicate", "/predicate/specimens/"),
        (_audit_of_refused, "predicate", "/predicate/specimens/"),
        (_free_sealed, "predicate", "/predicate/specimens/0/sealed"),
        (_subject_name, "statement", "/subject"),
        (_subject_digest, "predicate", "/predicate/selection_digest"),
        (_extra_key, "predicate", "/predicate:"),
        (_string_totals, "predicate", "/predicate/totals"),
    ],
)
def test_a_resigned_report_that_lies_fails_where_it_should(
    edit: Edit, step: str, location: str
) -> None:
    key = Ed25519PrivateKey.generate()
    statement = _statement_of(json.loads(REPORT.read_text()))
    statement["predicate"]["issuer"] = _keyid(key)
    assert verify_envelope_offline(_sign(statement, key), key.public_key()).ok
    lying = copy.deepcopy(statement)
    edit(lying)
    report = verify_envelope_offline(_sign(lying, key), key.public_key())
    failed = next(c for c in report.checks if not c.ok)
    assert (failed.name, failed.detail.startswith(location)) == (step, True), failed
    assert "ship it" not in failed.detail and "fine" not in failed.detail


def test_a_report_signed_by_another_key_names_it() -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    statement = _statement_of(json.loads(REPORT.read_text()))
    statement["predicate"]["issuer"] = _keyid(other)
    report = verify_envelope_offline(_sign(statement, key), key.public_key())
    failed = next(c for c in report.checks if not c.ok)
    assert (failed.name, failed.detail) == (
        "statement",
        "/predicate/issuer: is not the key that signed",
    )


# -- the client against a real service ---------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A real service whose home holds one report (``regress --local``)."""
    from tests.browser.stack import regress_report, start_stack, stop

    stack = start_stack(tmp_path_factory.mktemp("enclave"), worker=False)
    try:
        yield stack, regress_report(stack, tmp_path_factory.mktemp("regress"))
    finally:
        stop(stack.procs)


def test_the_client_lists_reads_and_confirms_a_report(served: tuple[Any, dict[str, Any]]) -> None:
    stack, envelope = served
    key = load_public_key_pem(stack.issuer_key.read_bytes())
    with EnclaveClient(base_url=stack.url, token=stack.tokens["alice"]) as alice:
        page = alice.reports(limit=5)
        assert len(page["items"]) == 1 and page["next"] is None
        item = page["items"][0]
        assert item["gate_passed"] is False and item["specimens"] == 3
        report_id = item["report_id"]
        assert alice.report(report_id) == envelope
        assert alice.report_summary(report_id) == _statement_of(envelope)["predicate"]
        confirmed = verify_envelope_offline(envelope, key, client=alice, audit_id=report_id)
        assert confirmed.ok and confirmed.checks[-1].name == "ledger"
        assert report_id in confirmed.checks[-1].detail
        unnamed = verify_envelope_offline(envelope, key, client=alice)
        assert [c.name for c in unnamed.checks if not c.ok] == ["ledger"]
        # the same signature without its key id: it verifies, but it is not the report
        # the service recorded under that id
        bare = {**envelope, "signatures": [{"sig": envelope["signatures"][0]["sig"]}]}
        differs = verify_envelope_offline(bare, key, client=alice, audit_id=report_id)
        assert [c.name for c in differs.checks if not c.ok] == ["ledger"]
        assert "different digest" in differs.checks[-1].detail
    with EnclaveClient(base_url=stack.url, token=stack.tokens["eve"]) as eve:
        assert eve.reports()["items"] == []
        with pytest.raises(ServiceRefused) as refused:
            eve.report(report_id)
        assert (refused.value.status, refused.value.code) == (404, "not_found")
        # eve's service knows no such report: the ledger check fails, naming no content
        other = verify_envelope_offline(envelope, key, client=eve, audit_id=report_id)
        assert [c.name for c in other.checks if not c.ok] == ["ledger"]
