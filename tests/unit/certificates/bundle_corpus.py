"""The certificate-bundle parity corpus the browser's bundle verifier is tested on
(``labextension/test/bundle-parity.test.ts``): a demo's bundles, valid and tampered with
by ``tests.unit.cli.test_cli_bundle``'s tamper functions, each with today's
``verify_bundle`` report. Envelopes are stored once, under ``envelopes``, and a case's
``bundle.envelope`` names one as ``"@<name>"``.

    PYTHONPATH=. python -m tests.unit.certificates.bundle_corpus [--home DEMO_HOME]

runs the demo (in a temporary home, unless given one that ran it) and rewrites
``labextension/test/fixtures/bundle-corpus.json``.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.certificates import load_public_key_pem, verify_bundle
from ledger.certificates.tlog import (
    Checkpoint,
    NoteVerifier,
    checkpoint_text,
    open_note,
    parse_checkpoint,
    parse_proof,
    proof_text,
    sign_note,
)
from tests.unit.cli.test_cli_bundle import TAMPERS, _specimen, _tamper

ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "labextension" / "test" / "fixtures" / "bundle-corpus.json"


def _cli(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from enclave.cli import main; main()", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return done.stdout


def _foreign(bundle: Mapping[str, Any], log_key: NoteVerifier) -> dict[str, Any]:
    """``bundle`` with its proofs' checkpoint re-signed by another log (a fixed key)."""
    note = parse_proof(bundle["certificate_entry"]["proof"]).note
    ours = parse_checkpoint(open_note(note, [log_key])[0])
    private = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"another log").digest())
    theirs = NoteVerifier("another.invalid/log", private.public_key())
    text = checkpoint_text(Checkpoint(origin=theirs.name, size=ours.size, root=ours.root))
    out = copy.deepcopy(dict(bundle))
    for part in ("specimen_entry", "certificate_entry"):
        proof = parse_proof(out[part]["proof"])
        signed = sign_note(text, theirs, private.sign)
        out[part]["proof"] = proof_text(
            type(proof)(index=proof.index, hashes=proof.hashes, note=signed)
        )
    return out


def _extra_cases(bundle: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Tampers beyond the CLI test's: each a bundle."""
    cases: dict[str, dict[str, Any]] = {}

    def variant(name: str) -> dict[str, Any]:
        cases[name] = copy.deepcopy(bundle)
        return cases[name]

    b = variant("specimen proof index")
    proof = parse_proof(b["specimen_entry"]["proof"])
    b["specimen_entry"]["proof"] = proof_text(
        type(proof)(index=proof.index + 1, hashes=proof.hashes, note=proof.note)
    )
    b = variant("specimen entry not canonical (spaced JSON)")
    fields = json.loads(base64.b64decode(b["specimen_entry"]["entry"]))
    b["specimen_entry"]["entry"] = base64.b64encode(json.dumps(fields).encode()).decode()
    b = variant("entry not base64")
    b["certificate_entry"]["entry"] = "!" + b["certificate_entry"]["entry"][1:]
    b = variant("proof not a tlog-proof")
    b["specimen_entry"]["proof"] = "c2sp.org/tlog-proof@v2" + b["specimen_entry"]["proof"][22:]
    b = variant("entries swapped")
    b["specimen_entry"], b["certificate_entry"] = b["certificate_entry"], b["specimen_entry"]
    b = variant("entry without its proof")
    del b["certificate_entry"]["proof"]
    b = variant("signature line dropped")
    for part in ("specimen_entry", "certificate_entry"):
        b[part]["proof"] = b[part]["proof"].rstrip("\n").rpartition("\n")[0] + "\n"
    return cases


def build(home: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        listing = json.loads(_cli(home, "certificates", "export", f"{scratch}/out", "--json"))
        return _build(home, listing)


def _build(home: Path, listing: Mapping[str, Any]) -> dict[str, Any]:
    paths = sorted(
        (Path(p) for p in listing["bundles"]),
        key=lambda p: parse_proof(json.loads(p.read_text())["certificate_entry"]["proof"]).index,
    )
    bundles = [json.loads(p.read_text()) for p in paths]
    log_text = _cli(home, "ledger", "checkpoint", "--public-key").strip()
    log_key = NoteVerifier.parse(log_text)
    pem = (home / "keys" / "signing-key.pem.pub").read_text()
    issuer = load_public_key_pem(pem.encode())
    bundle = bundles[0]
    others = {
        "same": bundles[1],
        "specimen": bundles[-1],
        "early": json.loads((home / "certificates" / paths[0].name).read_text()),
        "foreign": _foreign(bundle, log_key),
    }
    assert _specimen(others["same"]) == _specimen(bundle) != _specimen(others["specimen"])

    named: dict[str, tuple[Any, str]] = {"valid": (bundle, log_text)}
    named["valid, another specimen's bundle"] = (others["specimen"], log_text)
    for how in sorted(TAMPERS):
        tampered = copy.deepcopy(bundle)
        _tamper(how, tampered, copy.deepcopy(others))
        named[how] = (tampered, log_text)
    for how, tampered in _extra_cases(bundle).items():
        named[how] = (tampered, log_text)
    foreign_key = NoteVerifier(
        "another.invalid/log",
        Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"another log").digest()).public_key(),
    ).encode()
    named["another log's key"] = (bundle, foreign_key)
    named["a plain envelope, not a bundle"] = (bundle["envelope"], log_text)

    envelopes: dict[str, Any] = {}

    def stored(value: Any) -> Any:
        if not (isinstance(value, dict) and isinstance(value.get("envelope"), dict)):
            return value
        text = json.dumps(value["envelope"], sort_keys=True)
        ref = next((k for k, v in envelopes.items() if json.dumps(v, sort_keys=True) == text), None)
        if ref is None:
            ref = f"e{len(envelopes)}"
            envelopes[ref] = value["envelope"]
        return {**value, "envelope": f"@{ref}"}

    cases = []
    for name, (value, key) in named.items():
        report = verify_bundle(
            copy.deepcopy(value), public_key=issuer, log_key=NoteVerifier.parse(key)
        )
        cases.append(
            {"name": name, "bundle": stored(value), "log_key": key, "python": report.to_dict()}
        )
    return {"issuer_pem": pem, "log_key": log_text, "envelopes": envelopes, "cases": cases}


def expand(corpus: Mapping[str, Any], case: Mapping[str, Any]) -> Any:
    """A case's bundle with its envelope reference resolved."""
    value = copy.deepcopy(case["bundle"])
    ref = value.get("envelope") if isinstance(value, dict) else None
    if isinstance(ref, str) and ref.startswith("@"):
        value["envelope"] = copy.deepcopy(corpus["envelopes"][ref[1:]])
    return value


def render(corpus: Mapping[str, Any]) -> str:
    return json.dumps(corpus, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a home the demo ran in")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        home = args.home
        if home is None:
            home = Path(scratch) / "home"
            _cli(home, "demo", "--json")
        TARGET.write_text(render(build(home)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
