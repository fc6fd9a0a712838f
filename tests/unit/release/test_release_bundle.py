"""A release report proven offline: its bundle carries the proof that the ledger holds
its ``release.reported`` entry and, for every certificate it names, that certificate's
own bundle; a third party verifies it with the issuer's key and the log's key alone,
and each tampered part fails a named check."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import capture
from enclave.incidents import procurement
from enclave.release import (
    RegressPlan,
    Selector,
    regress,
    report_bundle,
    select,
    tag_specimen,
    verify_report_bundle,
)
from enclave.replay import CandidateCode
from ledger import report_id_of
from ledger.certificates import REPORT_BUNDLE_CHECK_NAMES, load_public_key_pem
from ledger.certificates.tlog import NoteVerifier
from tests.agents.candidates import score_shifted_run, write_candidate
from tests.support.canary import INCIDENT_CANARIES, find_canaries
from tests.support.cli_runner import run_cli
from tests.unit.release.report_bundle_corpus import flip

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = 12

Checks = list[tuple[str, bool, str]]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str]]:
    root = tmp_path_factory.mktemp("report-bundle")
    runtime = Runtime.open(Home.init(root / "home"))
    base = procurement.BASELINE_INPUT
    now = datetime.now(UTC)
    for seed, tags in ((base["seed"], ["lib", "must-hold"]), (7, ["lib"])):
        specimen = capture(
            runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=seed
        ).specimen_id
        tag_specimen(runtime, specimen, tags, now=now)
    folder = root / "candidate"
    folder.mkdir()
    candidate: CandidateCode = write_candidate(folder, "po_next", score_shifted_run())
    plan = RegressPlan(
        samples=SAMPLES,
        purpose="release-gate",
        requester="ci",
        candidate=candidate,
        must_hold=("must-hold",),
        authoritative_substitutes=("approval-policy",),
    )
    envelope, _ = regress(
        runtime, select(runtime, Selector(tags=("lib",))), plan, now=now, local=True
    )
    yield runtime, report_id_of(envelope)
    runtime.close()


@pytest.fixture(scope="module")
def keys(home: tuple[Runtime, str]) -> tuple[Any, NoteVerifier]:
    runtime, _ = home
    issuer = load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())
    verifier = run_cli(runtime.home.root, "ledger", "checkpoint", "--public-key", cwd=ROOT)
    assert verifier.returncode == 0, verifier.stderr
    return issuer, NoteVerifier.parse(verifier.stdout.strip())


@pytest.fixture(scope="module")
def bundle(home: tuple[Runtime, str]) -> dict[str, Any]:
    runtime, report_id = home
    return report_bundle(runtime, report_id)


def verified(bundle: dict[str, Any], keys: tuple[Any, NoteVerifier]) -> Checks:
    issuer, log_key = keys
    return verify_report_bundle(bundle, public_key=issuer, log_key=log_key)


def failed(checks: Checks) -> list[str]:
    return [name for name, ok, _ in checks if not ok]


def test_a_report_bundle_verifies_with_two_keys_and_no_ledger(
    bundle: dict[str, Any], keys: tuple[Any, NoteVerifier]
) -> None:
    checks = verified(json.loads(json.dumps(bundle)), keys)  # as read back from a file
    assert tuple(name for name, _, _ in checks) == REPORT_BUNDLE_CHECK_NAMES
    assert failed(checks) == [], checks
    assert len(bundle["certificates"]) == 2
    assert not find_canaries(json.dumps(bundle).encode(), INCIDENT_CANARIES)


def _tampered(bundle: dict[str, Any], how: str) -> dict[str, Any]:
    b = copy.deepcopy(bundle)
    if how == "report proof":
        b["report_entry"]["proof"] = flip(b["report_entry"]["proof"])
    elif how == "another entry":  # a certificate's entry in the report's place
        b["report_entry"] = b["certificates"][0]["certificate_entry"]
    elif how == "certificate dropped":
        b["certificates"].pop()
    elif how == "certificate proof":
        part = b["certificates"][0]["certificate_entry"]
        part["proof"] = flip(part["proof"])
    elif how == "report payload":
        statement = json.loads(base64.b64decode(b["envelope"]["payload"]))
        statement["predicate"]["gate"]["passed"] = not statement["predicate"]["gate"]["passed"]
        b["envelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    elif how == "extra key":
        b["note"] = "x"
    return b


@pytest.mark.parametrize(
    ("how", "fails"),
    [
        ("report proof", ["ledger entry"]),
        ("another entry", ["ledger entry"]),
        ("certificate dropped", ["certificates"]),
        ("certificate proof", ["certificates"]),
        ("report payload", ["signature and statement"]),
        ("extra key", ["bundle"]),
    ],
)
def test_each_tampered_part_fails_its_named_check(
    bundle: dict[str, Any], keys: tuple[Any, NoteVerifier], how: str, fails: list[str]
) -> None:
    checks = verified(_tampered(bundle, how), keys)
    assert failed(checks) == fails, checks


def test_another_logs_key_proves_nothing(
    bundle: dict[str, Any], keys: tuple[Any, NoteVerifier]
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    issuer, log_key = keys
    stranger = NoteVerifier(log_key.name, Ed25519PrivateKey.generate().public_key())
    checks = verified(bundle, (issuer, stranger))
    assert failed(checks) == ["certificates", "ledger entry"], checks


def test_export_writes_the_bundle_and_verify_checks_it_offline(
    home: tuple[Runtime, str], keys: tuple[Any, NoteVerifier], tmp_path: Path
) -> None:
    runtime, report_id = home
    out = tmp_path / "reports"
    done = run_cli(runtime.home.root, "release", "export", str(out), report_id, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    path = out / f"{report_id}.bundle.json"
    assert (out / f"{report_id}.dsse.json").is_file() and path.is_file()
    pub = Path(f"{runtime.home.signing_key_path}.pub")
    log_key = keys[1].encode()
    nowhere = tmp_path / "no-home"  # offline: no home, no database
    args = ("verify", str(path), "--public-key", str(pub), "--log-key", log_key, "--json")
    done = run_cli(nowhere, *args, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True
    assert not nowhere.exists()
    # with a home: its own keys, still no database read for the proofs
    done = run_cli(runtime.home.root, "release", "verify", str(path), "--json", cwd=ROOT)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True, done.stderr
    bad = tmp_path / "bad.bundle.json"
    bad.write_text(json.dumps(_tampered(json.loads(path.read_text()), "report proof")))
    done = run_cli(nowhere, *args[:1], str(bad), *args[2:], cwd=ROOT)
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["ok"] is False
    assert [c["check"] for c in answer["checks"] if not c["ok"]] == ["ledger entry"]
    done = run_cli(runtime.home.root, "release", "verify", str(bad), cwd=ROOT)
    assert done.returncode == 1 and "ledger entry" in done.stdout


def test_a_stored_report_naming_another_audits_certificate_is_refused(
    home: tuple[Runtime, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each member is found by its own audit's entry: a report whose rows pair each
    certificate with the other audit names no certificate that audit issued."""
    import dataclasses

    import ledger
    from enclave import IntegrityFailure

    runtime, report_id = home
    stored = ledger.stored_report(runtime.ledger.engine, report_id)
    assert stored is not None
    statement = json.loads(base64.b64decode(stored.envelope["payload"]))
    rows = statement["predicate"]["specimens"]
    assert len({row["audit"] for row in rows}) == 2
    rows[0]["audit"], rows[1]["audit"] = rows[1]["audit"], rows[0]["audit"]
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    swapped = dataclasses.replace(stored, envelope={**stored.envelope, "payload": payload})
    monkeypatch.setattr(ledger, "stored_report", lambda engine, rid: swapped)
    with pytest.raises(IntegrityFailure, match="holds no entry"):
        report_bundle(runtime, report_id)
