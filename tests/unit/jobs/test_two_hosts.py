"""Two hosts sharing nothing but a real PostgreSQL and a real OpenBao.

Host A holds the home where specimens are captured and the service runs (the
governance plane: broker identity, digest keyring, signing key). Host B is a second home
on a disjoint folder with only the database URL, the Vault address and its own worker
token. Capture on A; an audit admitted by the service on A is executed by a worker on B;
its certificate verifies on A. Then a worker on B is killed mid-audit and a worker on A
finishes that audit. B's folder ends with no key, no payload, no certificate and no
canary; nothing but ciphertext reaches the database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from enclave import Home, Runtime, policies_root, utc_now
from enclave.cli import capture_incidents
from enclave.governance import activate_policy, add_analyst, load_policy_file, validate_policy
from enclave.keys import admin_client
from enclave.service import add_worker
from enclave.vaultops import apply_setup
from tests.attack.test_grants_plane import CANARIES, _base_env, exports
from tests.fixtures.openbao import OpenBaoServer
from tests.fixtures.postgres import _bindir
from tests.support.canary import find_canaries, scan_tree
from tests.support.served import serving
from tests.unit.service.test_service import API, audit_body

pytestmark = [pytest.mark.vault, pytest.mark.postgres]

_MAIN = "from enclave.cli import main; main()"


@dataclass
class Hosts:
    a: Home
    b: Home
    a_env: dict[str, str]  # the service's and capture's environment on A
    worker_env: dict[str, dict[str, str]]  # per host: what a worker there holds
    url: str
    analyst: str
    specimen: str
    ledger_url: str

    def runtime(self) -> Runtime:
        return Runtime.open(self.a, env=self.a_env)

    def request_audit(self, samples: int) -> str:
        body = audit_body(self.specimen, samples=samples)
        answer = requests.post(
            self.url + f"{API}/audits",
            headers={"Authorization": f"Bearer {self.analyst}"},
            json=body,
            timeout=60,
        )
        assert answer.status_code == 202, answer.text
        return str(answer.json()["audit_id"])

    def status(self, audit_id: str) -> dict[str, Any]:
        answer = requests.get(
            self.url + f"{API}/audits/{audit_id}",
            headers={"Authorization": f"Bearer {self.analyst}"},
            timeout=60,
        )
        result: dict[str, Any] = answer.json()
        return result

    def verify(self, audit_id: str) -> dict[str, Any]:
        """The service on A verifies the audit's certificate against A's key and ledger."""
        answer = requests.get(
            self.url + f"{API}/certificates/{audit_id}/verify",
            headers={"Authorization": f"Bearer {self.analyst}"},
            timeout=60,
        )
        result: dict[str, Any] = answer.json()
        return result

    def worker(self, host: str, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", _MAIN, "worker", "--lease-seconds", "5", *extra],
            env={**_base_env(), **self.worker_env[host]},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its sandboxed children die with it
        )


def _token_file(path: Path, token: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token)
    return path


@pytest.fixture(scope="module")
def hosts(
    openbao: OpenBaoServer, postgres_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hosts]:
    name = "two_hosts_" + os.urandom(4).hex()
    postgres_server.admin(f'CREATE DATABASE "{name}"')
    ledger_url = postgres_server.url(name)
    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme"])
    shared = {
        "REPLAY_ENCLAVE_LEDGER_URL": ledger_url,
        "REPLAY_ENCLAVE_KEY_PROVIDER": "transit",
        "REPLAY_ENCLAVE_PAYLOAD_STORE": "database",
    }
    a_env = {**shared, **exports(setup.export_lines())}
    root_a = tmp_path_factory.mktemp("host-a")
    root_b = tmp_path_factory.mktemp("host-b")  # a disjoint folder: B's only home
    home_a, home_b = Home.init(root_a / "home"), Home.init(root_b / "home")
    now = utc_now()
    with Runtime.open(home_a, env=a_env) as runtime:
        specimens = capture_incidents(runtime)
        for path in sorted((policies_root() / "interventions").glob("*.toml")):
            policy = load_policy_file(runtime, path, now=now)
            assert validate_policy(runtime, policy.id, now=now).ok
            activate_policy(runtime, policy.id, now=now)
        _, analyst = add_analyst(
            runtime, "alice", tenant="acme", roles=["auditor", "restricted-clearance"], now=now
        )
        tokens = {host: add_worker(runtime, f"w{host}", now=now) for host in ("a", "b")}

    def worker_env(host: str, home: Home, root: Path, url: str) -> dict[str, str]:
        # a worker host holds: where its home, the database and Vault are, the service's
        # URL and its own token file — no Vault credential, no copy of A's home
        return {
            **shared,
            "REPLAY_ENCLAVE_HOME": str(home.root),
            "VAULT_ADDR": openbao.addr,
            "REPLAY_ENCLAVE_GRANT_SERVICE": url,
            "REPLAY_ENCLAVE_WORKER_TOKEN_FILE": str(_token_file(root / "w.token", tokens[host])),
        }

    try:
        with serving(home_a.root, {**_base_env(), **a_env}) as (_service, port):
            url = f"http://127.0.0.1:{port}"
            yield Hosts(
                a=home_a,
                b=home_b,
                a_env=a_env,
                worker_env={
                    "a": worker_env("a", home_a, root_a, url),
                    "b": worker_env("b", home_b, root_b, url),
                },
                url=url,
                analyst=analyst,
                specimen=specimens["procurement"],
                ledger_url=ledger_url,
            )
    finally:
        postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait_terminal(hosts: Hosts, audit_id: str, *, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = hosts.status(audit_id)
        if status["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.5)


def _stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[str, str]:
    if process.poll() is None:
        os.killpg(process.pid, sig)
    out, err = process.communicate(timeout=120)
    return out, err


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_an_audit_admitted_on_a_runs_on_b_and_verifies_on_a(hosts: Hosts) -> None:
    audit_id = hosts.request_audit(samples=6)
    worker_b = hosts.worker("b")
    try:
        status = _wait_terminal(hosts, audit_id)
    finally:
        out, err = _stop(worker_b)
    assert status["status"] == "COMPLETED", (status, err[-2000:])
    with hosts.runtime() as runtime, runtime.ledger.engine.connect() as conn:
        owners = conn.execute(
            sa.text("SELECT kind, lease_owner FROM jobs WHERE audit_id = :a"), {"a": audit_id}
        ).all()
    assert {kind for kind, _ in owners} == {"audit", "replay", "finalize"}
    assert all(str(owner).startswith("wb/") for _, owner in owners), owners
    # verified on A, against A's key and A's ledger
    verified = hosts.verify(audit_id)
    assert verified["ok"] is True, verified
    # B holds nothing it did not bring: no key, no payload, no certificate, no canary
    # (its own marker and config, the ledger head it last saw, two empty lock files)
    held = set(_files(hosts.b.root))
    own = {".replay-enclave-home", "config.toml", "ledger.head", "ledger.head.lock"}
    assert held <= own | {"payloads.lock"}
    assert (hosts.b.root / "payloads.lock").stat().st_size == 0
    assert "secret" not in (hosts.b.root / "config.toml").read_text()
    assert not any(scan_tree(hosts.b.root).values())
    assert not find_canaries((out + err).encode(), CANARIES)
    # and A keeps no payload files either: the ciphertext is in the database
    assert _files(hosts.a.root / "payloads") == []


def test_a_worker_on_b_killed_mid_audit_is_finished_by_a_worker_on_a(hosts: Hosts) -> None:
    # enough samples that B is still at work when the poll sees its lease, on a loaded
    # machine too; one connection polls (opening a runtime per poll could miss B's jobs).
    # Not the finalizer: it is short enough to finish between the poll and the kill.
    audit_id = hosts.request_audit(samples=40)
    worker_b = hosts.worker("b")
    deadline = time.monotonic() + 120
    held_by_b = sa.text(
        "SELECT count(*) FROM jobs WHERE audit_id = :a AND status = 'leased' "
        "AND lease_owner LIKE 'wb/%' AND kind != 'finalize'"
    )
    try:
        with hosts.runtime() as runtime:
            while True:  # until B holds one of the audit's jobs
                with runtime.ledger.engine.connect() as conn:
                    if conn.execute(held_by_b, {"a": audit_id}).scalar_one():
                        break
                assert worker_b.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
    finally:
        _out, err_b = _stop(worker_b, signal.SIGKILL)
    assert hosts.status(audit_id)["status"] not in ("COMPLETED", "FAILED")
    worker_a = hosts.worker("a")
    try:
        status = _wait_terminal(hosts, audit_id)
    finally:
        out_a, err_a = _stop(worker_a)
    assert status["status"] == "COMPLETED", (status, err_a[-2000:])
    with hosts.runtime() as runtime, runtime.ledger.engine.connect() as conn:
        jobs = conn.execute(
            sa.text("SELECT kind, lease_owner, attempts FROM jobs WHERE audit_id = :a"),
            {"a": audit_id},
        ).all()
        issued = runtime.ledger.entries(kind="certificate.issued", subject=audit_id)
    # the job B held was taken over by A after its lease ran out; one certificate
    assert any(attempts >= 2 and str(owner).startswith("wa/") for _, owner, attempts in jobs)
    assert len(issued) == 1
    verified = hosts.verify(audit_id)
    assert verified["ok"] is True, verified
    assert not find_canaries((err_b + out_a + err_a).encode(), CANARIES)
    assert not any(scan_tree(hosts.b.root).values())


def test_the_shared_database_holds_no_plaintext(hosts: Hosts) -> None:
    bindir = _bindir()
    assert bindir is not None
    dump = subprocess.run(
        [str(bindir / "pg_dump"), "--dbname", hosts.ledger_url.replace("+psycopg", "")],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    assert b"payload" in dump  # the payload tables are there, holding ciphertext ...
    assert not find_canaries(dump, CANARIES)  # ... and no plaintext anywhere
