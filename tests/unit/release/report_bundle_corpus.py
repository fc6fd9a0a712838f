"""The release-report-bundle parity corpus the browser's report bundle verifier is tested
on (``labextension/test/report-bundle-parity.test.ts``): the bundle of a release report
like the golden one (``scripts/export-release-report.py``: four specimens, a decision
changed, a failing gate, not-auditable rows), valid and tampered with, each with today's
``verify_report_bundle`` checks. Some lies are re-signed with the home's issuer key, as
a compromised issuer or a buggy one would write them: only the derived checks catch those.

    PYTHONPATH=. python -m tests.unit.release.report_bundle_corpus

rewrites ``labextension/test/fixtures/report-bundle-corpus.json``. The valid bundle's
envelope and members are stored once, under ``shared``; a case names one as
``"@shared:<name>"`` wherever it holds it unchanged (``expand`` resolves them).
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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.certificates import load_public_key_pem, verify_report_bundle
from ledger.certificates.tlog import NoteVerifier
from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "labextension" / "test" / "fixtures" / "report-bundle-corpus.json"
CLI = [sys.executable, "-c", "from enclave.cli import main; main()"]

Bundle = dict[str, Any]


def _cli(home: Path, *args: str) -> str:
    done = subprocess.run(
        [*CLI, *args, "--home", str(home)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return done.stdout


def _statement(envelope: Mapping[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def flip(proof: str) -> str:
    """The same tlog-proof with its first hash's first byte changed."""
    lines = proof.split("\n")
    raw = bytearray(base64.b64decode(lines[2]))
    raw[0] ^= 1
    lines[2] = base64.b64encode(bytes(raw)).decode()
    return "\n".join(lines)


def _retotal(predicate: dict[str, Any]) -> None:
    """Totals and gate recomputed from the rows, as an issuer that lies about a row
    would leave them consistent."""
    rows = predicate["specimens"]
    for label in predicate["totals"]:
        if label not in ("erased", "specimens"):
            predicate["totals"][label] = sum(r["label"] == label for r in rows)
    failing = sorted(r["specimen"] for r in rows if r["must_hold"] and r["label"] != "equivalent")
    predicate["gate"] = {"passed": not failing, "failing": failing}


def _cases(bundle: Bundle, resign: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Bundle]:
    cases: dict[str, Bundle] = {}

    def variant(name: str) -> Bundle:
        cases[name] = copy.deepcopy(bundle)
        return cases[name]

    def lie(name: str, change: Callable[[dict[str, Any]], None]) -> None:
        b = variant(name)
        statement = _statement(b["envelope"])
        change(statement["predicate"])
        b["envelope"] = resign(statement)

    b = variant("report proof")
    b["report_entry"]["proof"] = flip(b["report_entry"]["proof"])
    b = variant("a certificate's entry in the report's place")
    b["report_entry"] = b["certificates"][0]["certificate_entry"]
    b = variant("report entry without its proof")
    del b["report_entry"]["proof"]
    b = variant("report entry not base64")
    b["report_entry"]["entry"] = "!" + b["report_entry"]["entry"][1:]
    b = variant("report entry not canonical (spaced JSON)")
    fields = json.loads(base64.b64decode(b["report_entry"]["entry"]))
    b["report_entry"]["entry"] = base64.b64encode(json.dumps(fields).encode()).decode()
    b = variant("report proof's signature line dropped")
    proof = b["report_entry"]["proof"]
    b["report_entry"]["proof"] = proof.rstrip("\n").rpartition("\n")[0] + "\n"
    b = variant("a certificate dropped")
    b["certificates"].pop()
    b = variant("a certificate's proof")
    b["certificates"][0]["certificate_entry"]["proof"] = flip(
        b["certificates"][0]["certificate_entry"]["proof"]
    )
    b = variant("a certificate twice, another missing")
    b["certificates"][-1] = copy.deepcopy(b["certificates"][0])
    b = variant("a certificate's envelope malformed")
    b["certificates"][0]["envelope"] = {"payload": 1}
    b = variant("report payload changed, not re-signed")
    statement = _statement(b["envelope"])
    statement["predicate"]["gate"]["passed"] = not statement["predicate"]["gate"]["passed"]
    b["envelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    b = variant("extra key")
    b["note"] = "x"
    b = variant("certificates not a list")
    b["certificates"] = {}
    b = variant("another media type")
    b["mediaType"] = "application/vnd.replay-enclave.certificate-bundle.v1+json"

    def relabel(predicate: dict[str, Any]) -> None:
        row = next(r for r in predicate["specimens"] if r["label"] == "decision-changed")
        row["label"] = "equivalent"
        _retotal(predicate)

    lie("re-signed: a decision change called equivalent", relabel)

    def free_text(predicate: dict[str, Any]) -> None:
        row = next(r for r in predicate["specimens"] if r["label"] == "not-auditable")
        row["reason"] = "the agent said so"

    lie("re-signed: a reason in free text", free_text)

    def smaller_bound(predicate: dict[str, Any]) -> None:
        predicate["disclosure"]["bits_per_specimen"] = 1

    lie("re-signed: a smaller bound", smaller_bound)

    def gate_passes(predicate: dict[str, Any]) -> None:
        predicate["gate"] = {"passed": True, "failing": []}

    lie("re-signed: a gate that passes", gate_passes)

    def another_selection(predicate: dict[str, Any]) -> None:
        predicate["erased"] = ["spec-erased-elsewhere"]
        predicate["totals"]["erased"] = 1

    lie("re-signed: a member quietly erased", another_selection)

    def more_samples(predicate: dict[str, Any]) -> None:
        predicate["samples"] += 1

    lie("re-signed: another sample count", more_samples)

    def another_candidate(predicate: dict[str, Any]) -> None:
        predicate["intervention"]["digest"] = "sha256:" + "0" * 64

    lie("re-signed: another candidate", another_candidate)
    return cases


def build(home: Path, envelope: Mapping[str, Any]) -> dict[str, Any]:
    from enclave import Home, Runtime
    from enclave.release import sign_report
    from enclave.replay.certificates import signing_key
    from ledger import report_id_of

    report_id = report_id_of(envelope)
    with tempfile.TemporaryDirectory() as scratch:
        _cli(home, "release", "export", scratch, report_id)
        bundle: Bundle = json.loads((Path(scratch) / f"{report_id}.bundle.json").read_text())
    log_text = _cli(home, "ledger", "checkpoint", "--public-key").strip()
    pem = (home / "keys" / "signing-key.pem.pub").read_text()
    runtime = Runtime.open(Home.open(home))
    try:
        key = signing_key(runtime)
        named = _cases(bundle, lambda statement: sign_report(statement, key))
    finally:
        runtime.close()
    stranger = NoteVerifier(
        NoteVerifier.parse(log_text).name,
        Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"another log").digest()).public_key(),
    ).encode()
    keyed = {"valid": (bundle, log_text), "another log's key": (bundle, stranger)}
    keyed |= {name: (b, log_text) for name, b in named.items()}
    keyed["a certificate bundle, not a report bundle"] = (bundle["certificates"][0], log_text)
    issuer = load_public_key_pem(pem.encode())
    shared = {"envelope": bundle["envelope"]}
    shared |= {f"member{i}": member for i, member in enumerate(bundle["certificates"])}
    cases = [
        {
            "name": name,
            "bundle": _shared(value, shared),
            "log_key": key,
            "python": python_checks(value, issuer, key),
        }
        for name, (value, key) in keyed.items()
    ]
    return {"issuer_pem": pem, "log_key": log_text, "shared": shared, "cases": cases}


def _shared(value: Any, shared: Mapping[str, Any]) -> Any:
    """``value`` with every object equal to a shared one replaced by its reference."""
    for name, held in shared.items():
        if value == held:
            return f"{_REF}{name}"
    if isinstance(value, dict):
        return {k: _shared(v, shared) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v, shared) for v in value]
    return value


_REF = "@shared:"


def expand(corpus: Mapping[str, Any], value: Any) -> Any:
    """A case's bundle with its references resolved."""
    if isinstance(value, str) and value.startswith(_REF):
        return copy.deepcopy(corpus["shared"][value[len(_REF) :]])
    if isinstance(value, dict):
        return {k: expand(corpus, v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(corpus, v) for v in value]
    return value


def python_checks(bundle: Any, issuer: Any, log_key: str) -> dict[str, Any]:
    """``verify_report_bundle``'s checks as the Jupyter server answers them."""
    checks = verify_report_bundle(
        copy.deepcopy(bundle), public_key=issuer, log_key=NoteVerifier.parse(log_key)
    )
    return {
        "ok": all(ok for _, ok, _ in checks),
        "checks": [{"name": name, "ok": ok, "detail": detail} for name, ok, detail in checks],
    }


def render(corpus: Mapping[str, Any]) -> str:
    return json.dumps(corpus, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    exporter = load_script("export-release-report.py")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        home = work / "home"
        exporter.prepare_home(home)
        envelope = exporter.regress_report(home, work)
        TARGET.write_text(render(build(home, envelope)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
