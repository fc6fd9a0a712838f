"""The whole product in Vault mode against a real OpenBao: the same demo audits reach
the same classifications as the local mode, grants show in the audit log HMAC'd, and a
key server that disappears mid-audit fails the audit closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from enclave import EnclaveError, Home, Runtime, utc_now
from enclave.cli import capture_incidents, demo_audits
from enclave.keys import admin_client
from enclave.replay import AuditRequest, run_audit
from enclave.replay.certificates import certificate_bundle
from enclave.vaultops import apply_setup, stop_server
from ledger.certificates import keyid_of, load_public_key_pem, verify_bundle
from ledger.certificates.tlog import NoteVerifier, parse_proof
from tests.fixtures.openbao import transit_log_verifier, transit_public_key, vault_env
from tests.support.canary import find_canaries, scan_tree

pytestmark = pytest.mark.vault

CANARIES = ("CANARY-PROC-2f9c1e", "CANARY-CLAIM-8b41d0", "CANARY-SHARD-51aa7e")
SAMPLES = 8


def small(request: AuditRequest) -> AuditRequest:
    return AuditRequest(
        specimen_id=request.specimen_id,
        intervention=request.intervention,
        purpose=request.purpose,
        requester=request.requester,
        samples=SAMPLES,
        seed=request.seed,
        authoritative_substitutes=request.authoritative_substitutes,
    )


def run_demo(runtime: Runtime) -> list[tuple[str, str, str]]:
    captured = capture_incidents(runtime)
    out = []
    for title, request in demo_audits(captured):
        outcome = run_audit(runtime, small(request), now=utc_now())
        out.append((title, outcome.classification, outcome.auditability.class_))
    return out


def test_vault_mode_demo_matches_local_mode(tmp_path: Path, openbao, vault_setup) -> None:
    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme"])
    local = Runtime.open(Home.init(tmp_path / "local"), env={})
    vault = Runtime.open(Home.init(tmp_path / "vault"), env=vault_env(setup.export_lines()))
    try:
        local_results = run_demo(local)
        vault_results = run_demo(vault)
        assert vault.keys.name == "transit" and vault.broker.name == "transit"
        grants = vault.ledger.entries(kind="grant.used")
        # a certificate's bundle is proven against a checkpoint signed inside transit
        audit_id = vault.ledger.entries(kind="certificate.issued")[0].subject
        bundle = certificate_bundle(vault, audit_id)
        pinned = load_public_key_pem((tmp_path / "vault/keys/issuer-key-transit.pub").read_bytes())
    finally:
        local.close()
        vault.close()
    assert vault_results == local_results
    # verified with the issuer and log keys as transit holds them, read by an operator:
    # certificates are signed inside transit, and the home holds no private key
    issuer = transit_public_key(openbao, "_issuer")
    assert keyid_of(pinned) == keyid_of(issuer)
    origin = parse_proof(bundle["certificate_entry"]["proof"]).note.splitlines()[0]
    log_key = NoteVerifier.parse(transit_log_verifier(openbao, origin))
    report = verify_bundle(bundle, public_key=issuer, log_key=log_key)
    assert report.ok, report.first_failure()
    keys = tmp_path / "vault" / "keys"
    names = {p.name for p in keys.iterdir()}
    assert {"issuer-key-transit.pub", "log-key-transit.pub"} <= names
    assert not names & {"signing-key.pem", "signing-key.pem.pub", "log-key.pem"}
    assert b"transit/sign/replay-enclave-_issuer" in Path(openbao.audit_log).read_bytes()
    assert [c for _, c, _ in vault_results] == ["influential"] * 4 + ["observable-only"]
    # every wrapped key in the vault home is a transit ciphertext, never a local one
    for datakey in (tmp_path / "vault" / "payloads").rglob("datakey.json"):
        assert json.loads(datakey.read_text())["provider"] == "transit"
    # each job's grant is recorded by accessor (never the token) against the job
    assert grants and all(g.body["provider"] == "transit" and g.body["accessor"] for g in grants)
    log = Path(openbao.audit_log).read_bytes()
    assert b"transit/decrypt/replay-enclave-acme" in log
    assert b"sys/wrapping/unwrap" in log
    assert not find_canaries(log, CANARIES)
    assert not any(scan_tree(tmp_path).values())


def test_key_server_lost_mid_audit_fails_closed(tmp_path: Path, spare_openbao) -> None:
    setup = apply_setup(
        admin_client(spare_openbao.addr, spare_openbao.root_token), tenants=["acme"]
    )
    runtime = Runtime.open(Home.init(tmp_path / "home"), env=vault_env(setup.export_lines()))
    try:
        captured = capture_incidents(runtime)
        _title, request = demo_audits(captured)[0]
        stopped: list[int] = []

        def stop_after_baseline_gate(done: int, total: int) -> None:
            # the gate's grant was redeemed; the sample batch needs a fresh one
            if not stopped:
                stop_server(spare_openbao)
                stopped.append(done)

        with pytest.raises(EnclaveError) as info:
            run_audit(runtime, small(request), now=utc_now(), progress=stop_after_baseline_gate)
        failed = runtime.ledger.entries(kind="audit.failed")
        issued = runtime.ledger.entries(kind="certificate.issued")
    finally:
        runtime.close()
    message = str(info.value)
    assert len(message.splitlines()) == 1 and "vault:v" not in message and "hvs." not in message
    assert stopped == [1]
    assert len(failed) == 1 and not issued
    assert not list((tmp_path / "home" / "certificates").glob("*"))
    assert not any(scan_tree(tmp_path / "home").values())
