"""Certificates and release reports live in the database; files in a home are exports.

On SQLite and on a real PostgreSQL: an audit run by the job worker (as the service
runs it) and one run by the CLI each leave exactly one ``certificates`` row, the very
envelope ``verify`` accepts; the worker's finalizer writes no file into its home;
``regress`` stores its report (with the one tenant of its specimens, none when they
span tenants), which verifies against the stored certificates alone; exported files
verify from a folder; no row holds a canary."""

from __future__ import annotations

import base64
import json
import threading
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import Home, Runtime, export_certificates, export_reports
from enclave.capture import capture
from enclave.incidents import claims
from enclave.jobs import audit_status, certificate, run_worker, submit_audit
from enclave.release import RegressPlan, Selector, regress, select, verify_report
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.replay.certificates import RuntimeLedgerLookup
from ledger import (
    Conflict,
    certificates_by_digest,
    list_certificates,
    list_reports,
    report_id_of,
    store_certificate,
    stored_certificate,
    stored_report,
)
from ledger.certificates import envelope_digest, load_public_key_pem, verify_certificate
from ledger.tables import (
    DOCUMENT_TABLES,
    METADATA,
    CertificateRow,
    ReleaseReportRow,
    table_of,
)
from tests.support.canary import INCIDENT_CANARIES, find_canaries
from tests.support.cli_runner import run_cli

certificates, release_reports = table_of(CertificateRow), table_of(ReleaseReportRow)

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = 4


# home, runtime, specimens: tests/fixtures/homes.py (SQLite and PostgreSQL)


def _request(specimen_id: str) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester="analyst-1",
        samples=SAMPLES,
    )


def _key(runtime: Runtime) -> Any:
    return load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())


def _verifies(runtime: Runtime, envelope: dict[str, Any]) -> bool:
    report = verify_certificate(
        envelope, public_key=_key(runtime), ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    return bool(report.ok)


def _rows(runtime: Runtime, table: sa.Table) -> list[dict[str, Any]]:
    with runtime.ledger.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(table))]


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


def test_migrated_document_tables_match_their_definitions(runtime: Runtime) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    metadata = sa.MetaData()
    for name in DOCUMENT_TABLES:
        METADATA.tables[name].to_metadata(metadata)

    def include_name(name: str | None, type_: str, _parent: object) -> bool:
        return type_ != "table" or name in DOCUMENT_TABLES

    with runtime.ledger.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": include_name, "compare_type": True}
        )
        assert compare_metadata(context, metadata) == []


def test_a_worker_audit_leaves_one_certificate_row_and_no_file(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    status = submit_audit(
        runtime,
        _request(specimens["procurement"]),
        tenant_id="acme",
        now=datetime.now(UTC),
        batch_size=2,
    )
    run_worker(
        lambda: Runtime.open(runtime.home, env={}),
        worker_id="w1",
        stop=threading.Event(),
        once=True,
        isolation="auto",
    )
    assert audit_status(runtime, status.audit_id).status == "COMPLETED"
    rows = _rows(runtime, certificates)
    assert [r["audit_id"] for r in rows] == [status.audit_id]
    stored = stored_certificate(runtime.ledger.engine, status.audit_id)
    assert stored is not None
    # the very envelope the service serves (audits.certificate_json), and verify accepts it
    assert stored.envelope == certificate(runtime, status.audit_id)
    assert _verifies(runtime, stored.envelope)
    (issued,) = runtime.ledger.entries(kind="certificate.issued", subject=status.audit_id)
    assert stored.envelope_digest == issued.body["envelope_digest"]
    assert (stored.specimen_id, stored.tenant_id) == (specimens["procurement"], "acme")
    assert stored.classification == issued.body["classification"]
    # the finalizer wrote nothing into the worker's home
    assert _files(runtime.home.certificates_dir) == []


def test_storing_a_certificate_again_is_idempotent_and_another_one_conflicts(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    from enclave.replay import run_audit

    outcome = run_audit(runtime, _request(specimens["procurement"]), now=datetime.now(UTC))
    assert outcome.envelope is not None and outcome.certificate_path is None
    assert _files(runtime.home.certificates_dir) == []  # in-process: no file unless asked
    again = dict(
        audit_id=outcome.audit_id,
        specimen_id=specimens["procurement"],
        tenant_id="acme",
    )
    store_certificate(runtime.ledger.engine, envelope=outcome.envelope, **again)
    assert len(_rows(runtime, certificates)) == 1
    other = run_audit(runtime, _request(specimens["procurement"]), now=datetime.now(UTC))
    assert other.envelope is not None
    with pytest.raises(Conflict):
        store_certificate(runtime.ledger.engine, envelope=other.envelope, **again)
    assert {r["audit_id"] for r in _rows(runtime, certificates)} == {
        outcome.audit_id,
        other.audit_id,
    }


def _cli(home: Home, *args: str) -> tuple[int, str, str]:
    done = run_cli(home.root, *args, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


def test_a_cli_audit_stores_its_certificate_and_exports_the_same_file(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    procurement = specimens["procurement"]
    args = ("audit", procurement, "--purpose", "cli", "--revision", "model=r2")
    code, out, err = _cli(runtime.home, *args, "--samples", str(SAMPLES), "--json")
    assert code == 0, err
    result = json.loads(out)
    rows = _rows(runtime, certificates)
    assert [r["audit_id"] for r in rows] == [result["audit_id"]]
    stored = stored_certificate(runtime.ledger.engine, result["audit_id"])
    assert stored is not None and _verifies(runtime, stored.envelope)
    exported = Path(result["certificate_path"])
    assert exported.parent == runtime.home.certificates_dir
    assert json.loads(exported.read_text()) == stored.envelope
    # verify takes the stored certificate by its audit id
    code, out, err = _cli(runtime.home, "verify", result["audit_id"], "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out + err
    # --no-file: the database only
    code, out, err = _cli(runtime.home, *args, "--samples", str(SAMPLES), "--no-file", "--json")
    assert code == 0, err
    second = json.loads(out)
    assert second["certificate_path"] is None
    assert stored_certificate(runtime.ledger.engine, second["audit_id"]) is not None
    bundle = exported.with_name(exported.name.replace(".dsse.json", ".bundle.json"))
    assert json.loads(bundle.read_text())["envelope"] == stored.envelope  # its bundle beside it
    assert sorted(p.name for p in _files(runtime.home.certificates_dir)) == sorted(
        [bundle.name, exported.name]
    )
    # bad ids: one line, no echo
    for given in ("au-0123456789abcdef", "rr-0123456789abcdef", "no-such-file-CANARY"):
        code, out, err = _cli(runtime.home, "verify", given)
        assert code == 2 and out == "" and err.count("\n") == 1, (given, err)
        assert "CANARY" not in err and "0123456789abcdef" not in err


def _regress(runtime: Runtime, specimen_ids: list[str]) -> tuple[dict[str, Any], bool]:
    selection = select(runtime, Selector(specimens=tuple(specimen_ids)))
    plan = RegressPlan(
        samples=SAMPLES,
        purpose="release-gate",
        requester="ci",
        revision=("model", "r2"),
        must_hold=(),
    )
    return regress(runtime, selection, plan, now=datetime.now(UTC), local=True)


def _predicate(envelope: dict[str, Any]) -> dict[str, Any]:
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def test_regress_stores_its_report_which_verifies_from_the_database_and_as_exports(
    runtime: Runtime, specimens: dict[str, str], tmp_path: Path
) -> None:
    envelope, passed = _regress(runtime, [specimens["procurement"]])
    report_id = report_id_of(envelope)
    (row,) = _rows(runtime, release_reports)
    predicate = _predicate(envelope)
    assert row["report_id"] == report_id and len(report_id) == 19
    assert row["envelope_digest"].startswith("sha256:" + report_id[3:])
    assert (row["tenant_id"], row["specimens"], bool(row["gate_passed"])) == ("acme", 1, passed)
    assert row["selection_digest"] == predicate["selection_digest"]
    assert row["issued_at"] == predicate["issued_at"]
    (entry,) = runtime.ledger.entries(kind="release.reported")
    assert entry.body["report_id"] == report_id
    stored = stored_report(runtime.ledger.engine, report_id)
    assert stored is not None and stored.envelope == envelope
    # verifies from the database's certificates alone (the home has no certificate file)
    assert _files(runtime.home.certificates_dir) == []
    source = partial(certificates_by_digest, runtime.ledger.engine)
    checks = verify_report(
        envelope,
        public_key=_key(runtime),
        ledger_lookup=RuntimeLedgerLookup(runtime.ledger),
        certificate_source=source,
    )
    assert all(ok for _, ok, _ in checks), checks
    code, out, err = _cli(runtime.home, "release", "verify", report_id, "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out + err
    code, out, err = _cli(runtime.home, "release", "list", "--json")
    assert code == 0, err
    assert json.loads(out)["reports"] == [
        {
            "report_id": report_id,
            "issued_at": predicate["issued_at"],
            "gate_passed": passed,
            "specimens": 1,
            "selection_digest": predicate["selection_digest"],
            "tenant": "acme",
        }
    ]
    # export round trip: the files verify from a folder, through the CLI
    folder = tmp_path / "exported"
    code, _, err = _cli(runtime.home, "certificates", "export", str(folder))
    assert code == 0, err
    code, _, err = _cli(runtime.home, "release", "export", str(folder), report_id)
    assert code == 0, err
    assert json.loads((folder / f"{report_id}.dsse.json").read_text()) == envelope
    report_file = str(folder / f"{report_id}.dsse.json")
    code, out, err = _cli(
        runtime.home, "verify", report_file, "--certificates", str(folder), "--json"
    )
    assert code == 0 and json.loads(out)["ok"] is True, out + err
    for cert in folder.glob("au-*.dsse.json"):
        code, out, err = _cli(runtime.home, "verify", str(cert), "--json")
        assert code == 0 and json.loads(out)["ok"] is True, out + err
    # the database is what the default reads: without its certificate rows, it fails
    with runtime.ledger.engine.begin() as conn:
        conn.execute(sa.delete(certificates))
    code, out, err = _cli(runtime.home, "release", "verify", report_id, "--json")
    assert code == 1 and json.loads(out)["ok"] is False, out + err
    code, out, err = _cli(
        runtime.home, "release", "verify", report_id, "--certificates", str(folder), "--json"
    )
    assert code == 0, out + err
    # an unknown id to export: one line, nothing written
    code, out, err = _cli(runtime.home, "release", "export", str(tmp_path / "x"), "rr-" + "0" * 16)
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "x").exists()


def test_a_report_spanning_tenants_has_no_tenant(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    base: dict[str, Any] = claims.BASELINE_INPUT
    globex = capture(
        runtime, claims.AGENT, base["inputs"], tenant_id="globex", seed=base["seed"]
    ).specimen_id
    envelope, _ = _regress(runtime, [specimens["claims"], globex])
    stored = stored_report(runtime.ledger.engine, report_id_of(envelope))
    assert stored is not None and stored.tenant_id is None and stored.specimens == 2
    assert [r.report_id for r in list_reports(runtime.ledger.engine)] == [stored.report_id]


def test_no_stored_document_holds_plaintext(
    runtime: Runtime, specimens: dict[str, str], tmp_path: Path
) -> None:
    from enclave.replay import run_audit

    run_audit(runtime, _request(specimens["procurement"]), now=datetime.now(UTC))
    _regress(runtime, [specimens["procurement"]])
    rows = _rows(runtime, certificates) + _rows(runtime, release_reports)
    assert len(rows) == 3  # two certificates (the audit, the regress member), one report
    for row in rows:
        blob = json.dumps(row, default=str).encode()
        envelope = json.loads(row["envelope_json"])
        assert find_canaries(blob, INCIDENT_CANARIES) == []
        assert find_canaries(base64.b64decode(envelope["payload"]), INCIDENT_CANARIES) == []
    exported = export_certificates(runtime.ledger.engine, tmp_path / "out") + export_reports(
        runtime.ledger.engine, tmp_path / "out"
    )
    assert len(exported) == 3
    for path in exported:
        assert find_canaries(path.read_bytes(), INCIDENT_CANARIES) == []
    for cert in _rows(runtime, certificates):
        assert envelope_digest(json.loads(cert["envelope_json"])) == cert["envelope_digest"]
    assert len(list_certificates(runtime.ledger.engine)) == 2
