"""``replay-enclave audit`` and ``replay-enclave verify`` as a user runs them: a real
process on a real home; plus an independent DSSE check of a demo certificate.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]  # re-exported

from ledger import canonical_json
from ledger.certificates import IN_TOTO_PAYLOAD_TYPE, load_public_key_pem
from tests.support import cli_runner

cli = cli_runner.run_cli


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    home = tmp_path_factory.mktemp("cli") / "home"
    done = cli(home, "demo", "--json")
    assert done.returncode == 0, done.stderr
    yield home, with_exported_certificates(home, json.loads(done.stdout))


def with_exported_certificates(home: Path, demo: dict[str, Any]) -> dict[str, Any]:
    """The demo's certificates live in the database: export them (``certificates
    export``) and name each audit row's file (the audits ran one after the other, so
    their certificates, oldest first, are the rows in order)."""
    listed = cli(home, "certificates", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [c["audit_id"] for c in json.loads(listed.stdout)["certificates"]]
    assert len(ids) == len(demo["audits"])
    folder = home / "certificates"
    done = cli(home, "certificates", "export", str(folder))
    assert done.returncode == 0, done.stderr
    for row, audit_id in zip(demo["audits"], ids, strict=True):
        row["certificate"] = str(folder / f"{audit_id}.dsse.json")
    return demo


@pytest.fixture(scope="module")
def other_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("cli-other") / "home"
    done = cli(home, "demo", "--json")
    assert done.returncode == 0, done.stderr
    return home


def certificate(demo: dict[str, Any], title_start: str) -> Path:
    row = next(r for r in demo["audits"] if r["audit"].startswith(title_start))
    return Path(row["certificate"])


def verify_json(home: Path, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    done = cli(home, "verify", str(path), "--json", *extra)
    return done.returncode, json.loads(done.stdout)


def first_failed(report: dict[str, Any]) -> str | None:
    return next((c["name"] for c in report["checks"] if not c["ok"]), None)


# -- audit --json ------------------------------------------------------------------------


def test_audit_json_is_one_object(demo_home: tuple[Path, dict[str, Any]]) -> None:
    home, demo = demo_home
    done = cli(
        home,
        "audit",
        demo["specimens"]["procurement"],
        "--purpose",
        "cli test",
        "--revision",
        "model=r2",
        "--samples",
        "10",
        "--seed",
        "1",
        "--authoritative-substitute",
        "approval-policy",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # exactly one JSON document on stdout
    assert {"classification", "auditability", "certificate_path", "effect"} <= set(out)
    assert out["classification"] == "influential"
    assert out["auditability"]["class"] == "counterfactual-admissible"
    assert Path(out["certificate_path"]).is_file()
    # per-seed values never leave the enclave: the effect is the certificate's (v3)
    assert "deltas" not in out["effect"] and "histogram" not in out["effect"]
    assert set(out["effect"]["layer_changes"].values()) <= {"none", "some", "all"}
    assert out["disclosure"]["bits"] > 0 and out["disclosure"]["terms"]
    assert 0 < out["effect"]["flip_rate"] <= 1
    assert cli(home, "verify", out["certificate_path"]).returncode == 0


def test_audit_without_the_declaration_does_not_conclude_on_a_substitutes_answers(
    demo_home: tuple[Path, dict[str, Any]],
) -> None:
    # every sample sends the approval policy a score the record does not hold
    home, demo = demo_home
    args = ("--purpose", "cli test", "--revision", "model=r2", "--samples", "10", "--json")
    done = cli(home, "audit", demo["specimens"]["procurement"], *args)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["classification"] == "inconclusive"
    assert out["effect"]["flip_rate"] > 0  # measured and reported, not concluded from
    # and the finding says so, naming the boundary whose answers capped it
    assert out["finding"].startswith("Not enough evidence to tell whether switching call")
    assert "The label is capped at inconclusive" in out["finding"]
    assert "approval-policy" in out["finding"]


def test_audit_json_for_the_shard_refusal(demo_home: tuple[Path, dict[str, Any]]) -> None:
    home, demo = demo_home
    done = cli(
        home,
        "audit",
        demo["specimens"]["shard-maintenance"],
        "--purpose",
        "cli test",
        "--call",
        "planner/planner-model#0",
        "--field",
        "/preferred_shard",
        "--strategy",
        "replace",
        "--value",
        "shard-b",
        "--samples",
        "3",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["classification"] == "observable-only" and out["effect"] is None
    assert out["auditability"]["first_unverifiable_step"] == "executor/reserve_lock#0"
    assert out["finding"] == (
        "Replacing /preferred_shard in call planner/planner-model#0 was replayed, but no "
        f"counterfactual conclusion is certified: {out['auditability']['reason']} "
        "(first unverifiable step: executor/reserve_lock#0)."
    )


def test_audit_table(demo_home: tuple[Path, dict[str, Any]]) -> None:
    home, demo = demo_home
    done = cli(
        home,
        "audit",
        demo["specimens"]["claims"],
        "--purpose",
        "cli test",
        "--call",
        "main/fraud_score#0",
        "--field",
        "fraud_score",
        "--strategy",
        "perturb",
        "--delta",
        "-0.2",
        "--samples",
        "5",
        "--authoritative-substitute",
        "review-policy",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # the finding opens the output, before the table it rests on
    assert out.lstrip().startswith("Perturbing /fraud_score in call main/fraud_score#0 changed")
    assert "influential" in out and "decision flips" in out and "minimum detectable" in out
    # the served-by table: per arm, the intervened arm's recorded calls served partly by
    # the intervention (the certificate says some / all, never a count per call)
    assert "how calls were served" in out and "intervention some" in out
    assert "intervention 5" not in out


def test_audit_from_a_cut_names_the_cut(demo_home: tuple[Path, dict[str, Any]]) -> None:
    home, demo = demo_home
    done = cli(
        home,
        "audit",
        demo["specimens"]["claims"],
        "--purpose",
        "cli test",
        "--call",
        "main/review-policy#0",
        "--field",
        "/decision",
        "--strategy",
        "replace",
        "--value",
        '"AUTO_APPROVE"',
        "--samples",
        "3",
        "--from-cut",
        "before-authority",
    )
    assert done.returncode == 0, done.stderr
    assert "replayed from cut" in done.stdout
    assert "before-authority (main/before-authority#0)" in done.stdout
    # the fraud service call inside the cut's work has no served-by row: it was not made
    assert "main/fraud_score#0" not in done.stdout


def test_audit_from_a_cut_after_the_target_is_a_one_line_error(
    demo_home: tuple[Path, dict[str, Any]],
) -> None:
    home, demo = demo_home
    done = cli(
        home,
        "audit",
        demo["specimens"]["claims"],
        "--purpose",
        "cli test",
        "--call",
        "main/fraud_score#0",
        "--field",
        "fraud_score",
        "--strategy",
        "perturb",
        "--delta",
        "-0.2",
        "--samples",
        "3",
        "--from-cut",
        "before-authority",
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "target lies before the cut" in lines[0]


# -- verify --------------------------------------------------------------------------------


def test_verify_accepts_every_demo_certificate(demo_home: tuple[Path, dict[str, Any]]) -> None:
    home, demo = demo_home
    assert len(demo["audits"]) == 5  # the demo's five audits: none may be skipped unseen
    for row in demo["audits"]:
        code, report = verify_json(home, Path(row["certificate"]))
        assert code == 0 and report["ok"] is True, row["audit"]
        assert [c["name"] for c in report["checks"]] == [
            "envelope",
            "signature",
            "statement",
            "predicate",
            "subject",
            "ledger_entry",
        ]


def _tampered(tmp_path: Path, original: Path, how: str) -> Path:
    envelope = json.loads(original.read_text())
    if how == "payload":
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"]["effect"]["flip_rate"] = 0.0
        envelope["payload"] = base64.b64encode(canonical_json(statement)).decode()
    elif how == "signature":
        sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
        sig[5] ^= 0x01
        envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    elif how == "payloadType":
        envelope["payloadType"] = "application/json"
    path = tmp_path / f"{how}.dsse.json"
    path.write_text(json.dumps(envelope))
    return path


@pytest.mark.parametrize(
    ("how", "check"),
    [("payload", "signature"), ("signature", "signature"), ("payloadType", "envelope")],
)
def test_verify_names_the_failed_check_after_tampering(
    demo_home: tuple[Path, dict[str, Any]], tmp_path: Path, how: str, check: str
) -> None:
    home, demo = demo_home
    path = _tampered(tmp_path, certificate(demo, "procurement: model"), how)
    _, report = verify_json(home, path)
    assert report["ok"] is False
    assert first_failed(report) == check
    table = cli(home, "verify", str(path))
    assert "verification failed: " in table.stdout
    assert table.stdout.strip().splitlines()[-1].endswith(first_failed(report) or "?")


def test_a_certificate_does_not_verify_against_another_homes_ledger(
    demo_home: tuple[Path, dict[str, Any]], other_home: Path
) -> None:
    home, demo = demo_home
    path = certificate(demo, "claims: fraud score NULLIFY")
    # the issuer's key is given explicitly: only the ledger linkage differs
    _, report = verify_json(other_home, path, "--public-key", _pub(home))
    assert report["ok"] is False
    assert first_failed(report) in ("subject", "ledger_entry")
    passed = [c["name"] for c in report["checks"] if c["ok"]]
    assert passed[:4] == ["envelope", "signature", "statement", "predicate"]


def _pub(home: Path) -> str:
    return str(home / "keys" / "signing-key.pem.pub")


def test_failed_verification_exits_non_zero(
    demo_home: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    home, demo = demo_home
    path = _tampered(tmp_path, certificate(demo, "procurement: supplier"), "signature")
    assert cli(home, "verify", str(path)).returncode != 0


def test_verify_refuses_a_missing_or_garbled_file(
    demo_home: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    home, _ = demo_home
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{not json")
    for path in (tmp_path / "absent.json", garbled):
        done = cli(home, "verify", str(path))
        assert done.returncode == 2
        assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1


# -- an independent DSSE implementation --------------------------------------------------------


def test_securesystemslib_verifies_a_demo_certificate(
    demo_home: tuple[Path, dict[str, Any]],
) -> None:
    home, demo = demo_home
    key = load_public_key_pem(Path(_pub(home)).read_bytes())
    envelope = json.loads(certificate(demo, "shard maintenance").read_text())
    keyid = envelope["signatures"][0]["keyid"]
    theirs = SslibEnvelope.from_dict(copy.deepcopy(envelope))
    assert theirs.payload_type == IN_TOTO_PAYLOAD_TYPE
    sslib_key = SSlibKey.from_crypto(key, keyid=keyid)
    assert set(theirs.verify([sslib_key], 1)) == {keyid}
    statement = json.loads(theirs.payload)
    assert statement["subject"][0]["digest"]["sha256"]
    assert statement["predicate"]["classification"] == "observable-only"
    tampered = copy.deepcopy(envelope)
    tampered["payloadType"] = "application/json"
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(tampered).verify([sslib_key], 1)


def test_every_demo_certificate_is_tight_and_would_stay_so_at_1000_samples(
    demo_home: tuple[Path, dict[str, Any]],
) -> None:
    """The default certificate of a 1,000-sample audit states at most 256 bits: each demo
    certificate's own bound is the one its request implies, and the same request at
    N = 1000 (charged at admission from the sealed manifest, the looser count) stays
    within 256 bits."""
    from enclave import Home, Runtime
    from enclave.replay.disclosure import VocabularySize, disclosure_bound

    home, demo = demo_home
    with Runtime.open(Home.open(home), env={}) as runtime:
        for row in demo["audits"]:
            statement = json.loads(
                base64.b64decode(json.loads(Path(row["certificate"]).read_text())["payload"])
            )
            predicate = statement["predicate"]
            assert statement["predicateType"].endswith("/certificate/v3")
            assert "sample_rows" not in predicate
            assert "histogram" not in (predicate["effect"] or {})
            request = predicate["request"]
            manifest = runtime.ledger.get_specimen(request["specimen"]).manifest
            charged = disclosure_bound(
                samples=request["samples"],
                tolerance=request["tolerances"]["score"],
                vocabulary=VocabularySize.of_manifest(manifest),
            )
            assert 0 < predicate["disclosure"]["bits"] <= charged.bits
            at_1000 = disclosure_bound(
                samples=1000,
                tolerance=request["tolerances"]["score"],
                vocabulary=VocabularySize.of_manifest(manifest),
            )
            assert at_1000.bits <= 256, (row["audit"], at_1000.bits)
