"""Write the signed release report the front end's tests read.

A fresh enclave home with the three reference incidents captured, a second procurement
specimen (another seed) beside them, all four tagged ``release-gate/demo`` and the
procurement incident also ``must-hold``; then ``replay-enclave regress --local`` with a
candidate revision of the procurement agent whose supplier scores are 0.02 lower (a
decision changes). The report has a failing gate (the must-hold specimen), a
``decision-changed`` or ``equivalent`` row for each procurement specimen and
``not-auditable`` rows with their reasons for the incidents of other agents.

Writes ``tests/golden/release_report.dsse.json`` and its issuer key
``tests/golden/release_report.pub.pem``. The home, ids and signature change on every
run, so ``--check`` compares shapes: a fresh report must have the committed one's
statement type, predicate type, subject name, keys at every level, labels and reasons;
``tests/project/test_release_report_fixture.py`` runs it.

    PYTHONPATH=. python scripts/export-release-report.py [--check]
"""

from __future__ import annotations

import base64
import inspect
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "tests/golden/release_report.dsse.json"
KEY = ROOT / "tests/golden/release_report.pub.pem"
TAG = "release-gate/demo"
SAMPLES = 40
CLI = [sys.executable, "-c", "from enclave.cli import main; main()"]

_CANDIDATE_HEADER = (
    "from __future__ import annotations\n"
    "from dataclasses import replace\n"
    "from enclave.incidents.procurement import (\n"
    "    AGENT as _CAPTURED, APPROVAL, DECIDER, RETRIEVAL, SUPPLIER_RISK, TEMPLATE, LiveWorld,\n"
    ")\n"
)


def candidate_source() -> str:
    """The captured procurement ``run`` with every supplier score 0.02 lower."""
    from enclave.incidents import procurement

    body = inspect.getsource(procurement.run).replace("+ jitter\n", "+ jitter\n        - 0.02\n")
    return _CANDIDATE_HEADER + body + "\nAGENT = replace(_CAPTURED, function=run)\n"


def prepare_home(home: Path) -> dict[str, str]:
    """The library: {role: specimen id}; ``held`` is the must-hold procurement one."""
    from datetime import UTC, datetime

    from enclave._home import Home
    from enclave._runtime import Runtime
    from enclave.capture import capture
    from enclave.cli._demo import capture_incidents
    from enclave.incidents import procurement
    from enclave.release import tag_specimen

    runtime = Runtime.open(Home.init(home))
    try:
        captured = capture_incidents(runtime)
        base: dict[str, Any] = dict(procurement.BASELINE_INPUT)
        other = capture(
            runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=7
        ).specimen_id
        now = datetime.now(UTC)
        held = captured[procurement.AGENT.name]
        for specimen in [*captured.values(), other]:
            tags = [TAG, "must-hold"] if specimen == held else [TAG]
            tag_specimen(runtime, specimen, tags, now=now)
    finally:
        runtime.close()
    return {"held": held, "other": other}


def regress_report(home: Path, work: Path) -> dict[str, Any]:
    """Run ``replay-enclave regress --local`` on ``home``; the signed envelope."""
    source = work / "candidate"
    source.mkdir()
    (source / "procurement_next.py").write_text(candidate_source(), encoding="utf-8")
    out = work / "release-report.dsse.json"
    done = subprocess.run(
        [
            *CLI,
            "regress",
            "--tag",
            TAG,
            "--candidate",
            "procurement_next:AGENT",
            "--candidate-path",
            str(source),
            "--samples",
            str(SAMPLES),
            # the approval rule's substitute is the rule, as the procurement policies say
            "--authoritative-substitute",
            "approval-policy",
            "--local",
            "--out",
            str(out),
            "--home",
            str(home),
            "--json",
        ],
        capture_output=True,
        cwd=str(ROOT),
        check=False,
        timeout=1800,
    )
    if done.returncode not in (0, 5):  # 5: the gate failed, the report is written
        raise RuntimeError("regress failed: " + done.stderr.decode(errors="replace")[-2000:])
    envelope: dict[str, Any] = json.loads(out.read_text())
    return envelope


def generate() -> tuple[dict[str, Any], bytes]:
    """A fresh signed report and the issuer's public key PEM."""
    work = Path(tempfile.mkdtemp(prefix="release-report-"))
    try:
        home = work / "home"
        prepare_home(home)
        envelope = regress_report(home, work)
        pem = (home / "keys" / "signing-key.pem.pub").read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return envelope, pem


def statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def summary(envelope: dict[str, Any]) -> dict[str, Any]:
    """What ``--check`` compares: shapes and vocabulary, not ids, times or signatures.
    Fields that are null in some rows and strings in others (``reason``, ``certificate``)
    compare by key only."""
    statement = statement_of(envelope)
    predicate = statement["predicate"]
    rows = predicate["specimens"]
    return {
        "_type": statement["_type"],
        "predicateType": statement["predicateType"],
        "subject": [s["name"] for s in statement["subject"]],
        "envelope": sorted(envelope),
        "predicate": sorted(predicate),
        "row keys": sorted({k for r in rows for k in r}),
        "totals": sorted(predicate["totals"]),
        "gate": sorted(predicate["gate"]),
        "intervention": sorted(predicate["intervention"]),
        "labels": sorted({r["label"] for r in rows}),
        "reasons": sorted({r["reason"] for r in rows if r["reason"] is not None}),
        "must-hold rows": sum(bool(r["must_hold"]) for r in rows),
        "gate passed": predicate["gate"]["passed"],
    }


def write(envelope: dict[str, Any], pem: bytes) -> None:
    TARGET.write_text(json.dumps(envelope, indent=2, sort_keys=True) + "\n")
    KEY.write_bytes(pem)


def main(argv: list[str]) -> int:
    envelope, pem = generate()
    if "--check" in argv:
        committed = json.loads(TARGET.read_text())
        if summary(committed) != summary(envelope):
            print(
                f"{TARGET.name} is stale: run scripts/export-release-report.py",
                file=sys.stderr,
            )
            return 1
        return 0
    write(envelope, pem)
    print(json.dumps(summary(envelope), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
