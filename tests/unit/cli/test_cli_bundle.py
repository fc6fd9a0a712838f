"""Certificate bundles (``<audit>.bundle.json``): every demo certificate's bundle verifies
with the issuer key and the log key alone, on a machine that has no home; each part
tampered with fails a named check; a ledger whose history was rewritten yields no new
bundle while an old one still verifies on its own."""

from __future__ import annotations

import base64
import copy
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import BUNDLE_CHECK_NAMES, finding, load_public_key_pem, verify_bundle
from ledger.certificates.tlog import NoteVerifier, parse_proof, proof_text
from tests.support import cli_runner
from tests.support.canary import INCIDENT_CANARIES, find_canaries
from tests.unit.cli.test_cli_capture import assert_one_line_error

cli = cli_runner.run_cli


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Path], str]]:
    """A demo home, its five certificates exported as bundles (in the order they were
    issued, all proven against the checkpoint signed at export), and its log key."""
    home = tmp_path_factory.mktemp("bundle") / "home"
    assert cli(home, "demo", "--json").returncode == 0
    folder = home.parent / "exported"
    done = cli(home, "certificates", "export", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    bundles = sorted(
        (Path(p) for p in json.loads(done.stdout)["bundles"]),
        key=lambda p: parse_proof(_load(p)["certificate_entry"]["proof"]).index,
    )
    key = cli(home, "ledger", "checkpoint", "--public-key")
    assert key.returncode == 0, key.stderr
    yield home, bundles, key.stdout.strip()


def _issuer(home: Path) -> Path:
    return home / "keys" / "signing-key.pem.pub"


def offline(tmp_path: Path, home: Path, bundle: Path, log_key: str) -> dict[str, Any]:
    """``verify`` on a machine with only the bundle and the two public keys: its home
    names a folder that does not exist, and must still not exist afterwards."""
    here = tmp_path / "reviewer"
    here.mkdir(exist_ok=True)
    shutil.copy(bundle, here / "c.bundle.json")
    shutil.copy(_issuer(home), here / "issuer.pem")
    nowhere = tmp_path / "no-home"
    done = cli_runner.run_cli(
        nowhere,
        "verify",
        str(here / "c.bundle.json"),
        "--public-key",
        str(here / "issuer.pem"),
        "--log-key",
        log_key,
        "--json",
    )
    assert not nowhere.exists()
    report = json.loads(done.stdout)
    assert done.returncode == (0 if report["ok"] else 1)
    return report


def test_every_demo_bundle_verifies_offline(
    demo: tuple[Path, list[Path], str], tmp_path: Path
) -> None:
    home, bundles, log_key = demo
    assert len(bundles) == 5
    for bundle in bundles:
        report = offline(tmp_path, home, bundle, log_key)
        assert report["ok"], report
        assert [c["name"] for c in report["checks"]] == list(BUNDLE_CHECK_NAMES)
    # the bundle carries the certificate the ledger stores, byte for byte
    envelope = json.loads(bundles[0].read_text())["envelope"]
    exported = bundles[0].with_name(bundles[0].name.replace(".bundle.", ".dsse."))
    assert envelope == json.loads(exported.read_text())


def test_no_bundle_carries_payload_content(demo: tuple[Path, list[Path], str]) -> None:
    """The demo's incidents hold canaries in their payloads: none is in a bundle, in
    its file or in the entries and proofs it carries (base64 inside the file)."""
    home, bundles, _ = demo
    for path in [*bundles, *(home / "certificates").glob("*.bundle.json")]:
        bundle = _load(path)
        carried = [path.read_bytes()] + [
            base64.b64decode(bundle[part]["entry"]) + bundle[part]["proof"].encode()
            for part in ("specimen_entry", "certificate_entry")
        ]
        for data in carried:
            assert find_canaries(data, INCIDENT_CANARIES) == [], path.name


def test_offline_verify_re_derives_each_certificates_finding(
    demo: tuple[Path, list[Path], str], tmp_path: Path
) -> None:
    """The finding a reviewer reads is the verifier's own, from the figures it verified:
    the sentence of the predicate in the bundle, printed before the checks."""
    home, bundles, log_key = demo
    labels = set()
    for bundle in bundles:
        statement = json.loads(base64.b64decode(_load(bundle)["envelope"]["payload"]))
        labels.add(statement["predicate"]["classification"])
        expected = finding(statement["predicate"], statement["predicateType"])
        assert offline(tmp_path, home, bundle, log_key)["finding"] == expected
    assert labels == {"influential", "observable-only"}  # the demo's five audits
    done = cli(home, "verify", str(bundles[0]))
    assert done.returncode == 0
    first = done.stdout.splitlines()[0]
    assert first.split()[0] in {"Switching", "Replacing", "Removing", "Perturbing"}


def test_a_tampered_bundle_states_no_finding(
    demo: tuple[Path, list[Path], str], tmp_path: Path
) -> None:
    home, bundles, log_key = demo
    bundle = _load(bundles[0])
    _tamper("envelope signature", bundle, {})
    path = tmp_path / "t.bundle.json"
    path.write_text(json.dumps(bundle))
    report = offline(tmp_path, home, path, log_key)
    assert not report["ok"] and report["finding"] is None
    done = cli(home, "verify", str(path))
    assert done.returncode == 1 and "paired run" not in done.stdout


def test_a_bundle_verifies_against_its_home_by_default(demo: tuple[Path, list[Path], str]) -> None:
    home, bundles, _ = demo
    done = cli(home, "verify", str(bundles[1]), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["ok"], done.stdout


# -- tampering, each part: the check that must fail ----------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _specimen(bundle: dict[str, Any]) -> str:
    entry = json.loads(base64.b64decode(bundle["certificate_entry"]["entry"]))
    return str(entry["body"]["specimen_id"])


def _flip(text: str, at: int = 5) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[at] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _edit_proof(bundle: dict[str, Any], part: str, edit: Callable[[Any], Any]) -> None:
    proof = parse_proof(bundle[part]["proof"])
    bundle[part]["proof"] = proof_text(edit(proof))


def _with_hash_flipped(proof: Any) -> Any:
    hashes = list(proof.hashes)
    hashes[0] = base64.b64decode(_flip(base64.b64encode(hashes[0]).decode()))
    return type(proof)(index=proof.index, hashes=tuple(hashes), note=proof.note)


def _with_index(delta: int) -> Callable[[Any], Any]:
    return lambda p: type(p)(index=p.index + delta, hashes=p.hashes, note=p.note)


def _with_note(note: str) -> Callable[[Any], Any]:
    return lambda p: type(p)(index=p.index, hashes=p.hashes, note=note)


def _signature_flipped(note: str) -> str:
    body, _, line = note.rstrip("\n").rpartition("\n")
    name, encoded = line.rsplit(" ", 1)
    return f"{body}\n{name} {_flip(encoded, 40)}\n"


def _entry_edited(
    bundle: dict[str, Any], part: str, change: Callable[[dict[str, Any]], None]
) -> None:
    entry = json.loads(base64.b64decode(bundle[part]["entry"]))
    change(entry)
    data = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    bundle[part]["entry"] = base64.b64encode(data).decode()


def _tamper(how: str, bundle: dict[str, Any], others: dict[str, dict[str, Any]]) -> None:
    """``others``: ``same``, a bundle of another certificate of the same specimen;
    ``specimen``, one of another specimen's; ``early``, one proven against an earlier
    checkpoint of this log; ``foreign``, one from another log."""
    note = parse_proof(bundle["certificate_entry"]["proof"]).note
    if how == "media type":
        bundle["mediaType"] = "application/json"
    elif how == "an extra key":
        bundle["note"] = "trust me"
    elif how == "envelope signature":
        bundle["envelope"]["signatures"][0]["sig"] = _flip(
            bundle["envelope"]["signatures"][0]["sig"]
        )
    elif how == "certificate proof hash":
        _edit_proof(bundle, "certificate_entry", _with_hash_flipped)
    elif how == "specimen proof hash":
        _edit_proof(bundle, "specimen_entry", _with_hash_flipped)
    elif how == "certificate proof index":
        _edit_proof(bundle, "certificate_entry", _with_index(1))
    elif how == "proof cut short":
        _edit_proof(
            bundle,
            "certificate_entry",
            lambda p: type(p)(index=p.index, hashes=p.hashes[:-1], note=p.note),
        )
    elif how == "checkpoint signature":
        for part in ("specimen_entry", "certificate_entry"):
            _edit_proof(bundle, part, _with_note(_signature_flipped(note)))
    elif how == "checkpoint of another log":
        theirs = parse_proof(others["foreign"]["certificate_entry"]["proof"]).note
        for part in ("specimen_entry", "certificate_entry"):
            _edit_proof(bundle, part, _with_note(theirs))
    elif how == "proofs against two checkpoints":
        _edit_proof(bundle, "specimen_entry", _with_note(_signature_flipped(note)))
    elif how == "proof against another checkpoint of this log":
        earlier = parse_proof(others["early"]["certificate_entry"]["proof"]).note
        assert earlier != note
        for part in ("specimen_entry", "certificate_entry"):
            _edit_proof(bundle, part, _with_note(earlier))
    elif how == "another certificate's entry":
        bundle["certificate_entry"] = others["same"]["certificate_entry"]
    elif how == "certificate entry edited":
        _entry_edited(bundle, "certificate_entry", lambda e: e["body"].update(auditability="x"))
    elif how == "specimen entry edited":
        _entry_edited(bundle, "specimen_entry", lambda e: e.update(recorded_at="1970-01-01"))
    elif how == "entry not canonical":
        raw = base64.b64decode(bundle["certificate_entry"]["entry"])
        bundle["certificate_entry"]["entry"] = base64.b64encode(raw + b" ").decode()
    elif how == "envelope of another certificate":
        bundle["envelope"] = others["same"]["envelope"]
    elif how == "envelope of another specimen's certificate":
        bundle["envelope"] = others["specimen"]["envelope"]
    else:
        raise AssertionError(how)


TAMPERS = {
    "media type": "envelope",
    "an extra key": "envelope",
    "envelope signature": "signature",
    "certificate proof hash": "ledger_entry",
    "specimen proof hash": "subject",
    "certificate proof index": "ledger_entry",
    "proof cut short": "ledger_entry",
    "checkpoint signature": "checkpoint",
    "checkpoint of another log": "checkpoint",
    "proofs against two checkpoints": "checkpoint",
    "proof against another checkpoint of this log": "subject",
    "another certificate's entry": "ledger_entry",
    "certificate entry edited": "ledger_entry",
    "specimen entry edited": "subject",
    "entry not canonical": "ledger_entry",
    "envelope of another certificate": "ledger_entry",
    "envelope of another specimen's certificate": "subject",
}


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """A bundle from another home's log, and that log's verifier key."""
    home = tmp_path_factory.mktemp("bundle-other") / "home"
    done = cli(home, "demo", "--json")
    assert done.returncode == 0, done.stderr
    key = cli(home, "ledger", "checkpoint", "--public-key").stdout.strip()
    return _load(next((home / "certificates").glob("*.bundle.json"))), key


@pytest.mark.parametrize("how", sorted(TAMPERS))
def test_each_tampered_part_fails_its_named_check(
    demo: tuple[Path, list[Path], str], foreign: tuple[dict[str, Any], str], how: str
) -> None:
    home, bundles, log_key = demo
    bundle = _load(bundles[0])
    others = {
        "same": _load(bundles[1]),  # the demo's second audit is of its first specimen
        "specimen": _load(bundles[-1]),
        "early": _load(home / "certificates" / bundles[0].name),  # made by its audit
        "foreign": foreign[0],
    }
    assert _specimen(others["same"]) == _specimen(bundle) != _specimen(others["specimen"])
    issuer = load_public_key_pem(_issuer(home).read_bytes())
    verifier = NoteVerifier.parse(log_key)
    assert verify_bundle(copy.deepcopy(bundle), public_key=issuer, log_key=verifier).ok
    _tamper(how, bundle, others)
    report = verify_bundle(bundle, public_key=issuer, log_key=verifier)
    failed = report.first_failure
    assert not report.ok and failed is not None
    assert failed.name == TAMPERS[how], (how, failed)


def test_another_log_key_fails_the_checkpoint(
    demo: tuple[Path, list[Path], str], foreign: tuple[dict[str, Any], str]
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    home, bundles, log_key = demo
    issuer = load_public_key_pem(_issuer(home).read_bytes())
    ours = NoteVerifier.parse(log_key)
    for key in (
        NoteVerifier.parse(foreign[1]),  # another log's real key
        NoteVerifier(ours.name, Ed25519PrivateKey.generate().public_key()),  # our name
    ):
        report = verify_bundle(_load(bundles[0]), public_key=issuer, log_key=key)
        assert report.first_failure is not None
        assert report.first_failure.name == "checkpoint"


# -- a rewritten history -----------------------------------------------------------------


def test_a_rewritten_ledger_yields_no_new_bundle_and_old_bundles_still_verify(
    demo: tuple[Path, list[Path], str], tmp_path: Path
) -> None:
    source, bundles, log_key = demo
    home = tmp_path / "home"
    shutil.copytree(source, home)
    db = sqlite3.connect(home / "ledger.db")
    try:  # an insider edits the first entry's body in place (chain and tree untouched)
        edited = db.execute(
            "UPDATE ledger_entries SET body_json = replace(body_json, 'acme', 'acmf') "
            "WHERE entry_index = 0 AND body_json LIKE '%acme%'"
        )
        assert edited.rowcount == 1
        db.commit()
    finally:
        db.close()
    out = tmp_path / "again"
    done = cli(home, "certificates", "export", str(out))
    assert assert_one_line_error(done, code=1).startswith("error: ")
    assert not out.exists()  # nothing half-written: no envelope without its bundle
    # a bundle issued before is self-contained: it still verifies, and it still proves
    # what the entry said when it was signed
    assert offline(tmp_path, source, bundles[0], log_key)["ok"]


# -- bad input ---------------------------------------------------------------------------


def test_bad_log_keys_are_one_line_errors(
    demo: tuple[Path, list[Path], str], tmp_path: Path
) -> None:
    home, bundles, log_key = demo
    for given in ("not-a-key", log_key[:-4] + "AAAA", "a+b+c"):
        line = assert_one_line_error(cli(home, "verify", str(bundles[0]), "--log-key", given))
        assert line == "error: the log key is not a C2SP Ed25519 verifier key"
    envelope = bundles[0].with_name(bundles[0].name.replace(".bundle.", ".dsse."))
    line = assert_one_line_error(cli(home, "verify", str(envelope), "--log-key", log_key))
    assert line == "error: --log-key and --witness verify a bundle (<audit>.bundle.json)"
    line = assert_one_line_error(
        cli(home, "ledger", "checkpoint", "--public-key", "--out", str(tmp_path / "x"))
    )
    assert line == "error: --public-key signs nothing: it takes no --out"
    assert not (tmp_path / "x").exists()


def test_the_public_key_is_the_one_that_signs(demo: tuple[Path, list[Path], str]) -> None:
    home, _, log_key = demo
    done = cli(home, "ledger", "checkpoint", "--json")
    assert json.loads(done.stdout)["verifier_key"] == log_key


# -- a third party's verifier: hashlib and cryptography only -------------------------------

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "verify_bundle.py"


def _third_party(bundle: dict[str, Any], issuer: Path, log_key: str, tmp_path: Path) -> int:
    import subprocess
    import sys

    path = tmp_path / "given.bundle.json"
    path.write_text(json.dumps(bundle))
    done = subprocess.run(
        [sys.executable, "-I", str(SCRIPT), str(path), str(issuer), log_key],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return done.returncode


def test_the_documented_standalone_verifier_agrees(
    demo: tuple[Path, list[Path], str], foreign: tuple[dict[str, Any], str], tmp_path: Path
) -> None:
    """``examples/verify_bundle.py``, which imports only the standard library and
    cryptography, accepts every demo bundle and rejects each tampering the project's
    verifier rejects."""
    import ast

    tree = ast.parse(SCRIPT.read_text())
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert imported == {"base64", "hashlib", "json", "sys", "pathlib", "cryptography"}
    home, bundles, log_key = demo
    for bundle in bundles:
        assert _third_party(_load(bundle), _issuer(home), log_key, tmp_path) == 0
    others = {
        "same": _load(bundles[1]),
        "specimen": _load(bundles[-1]),
        "early": _load(home / "certificates" / bundles[0].name),
        "foreign": foreign[0],
    }
    for how in sorted(TAMPERS):
        if how in ("an extra key", "media type", "entry not canonical"):
            continue  # shape rules of this project's format, not of the proof
        bundle = _load(bundles[0])
        _tamper(how, bundle, others)
        assert _third_party(bundle, _issuer(home), log_key, tmp_path) != 0, how


def test_the_documented_inclusion_check_is_the_scripts() -> None:
    page = (SCRIPT.parents[1] / "docs" / "transparency.md").read_text()
    block = page.split("```python\ndef inclusion_root", 1)[1].split("```", 1)[0]
    for line in ("def inclusion_root" + block).strip().splitlines():
        assert line in SCRIPT.read_text(), line
