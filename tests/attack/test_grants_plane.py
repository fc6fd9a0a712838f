"""Grant minting on the governance plane, against a real OpenBao and a real service.

The attack this answers: a replay worker held the broker AppRole, and a wrapped decrypt
followed by its own unwrap returned the data key of every specimen of every tenant. Now
the service (admission: Cedar, eligibility, budget, ledger) holds the broker identity,
split per tenant; a worker holds no Vault credential and asks the service for the grant
of a job it has claimed. Each test below is what an attacker holding a worker's things
would try.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from enclave import BadInput, GrantRefused, Home, Refused, Runtime, policies_root, utc_now
from enclave.capture import capture
from enclave.cli import capture_incidents
from enclave.governance import activate_policy, add_analyst, load_policy_file, validate_policy
from enclave.incidents import claims
from enclave.jobs import stamp
from enclave.keys import (
    DigestKeys,
    TransitGrant,
    TransitKeyProvider,
    VaultSettings,
    admin_client,
    anonymous_adapter,
    derivation_context,
)
from enclave.replay.certificates import signing_key
from enclave.vaultops import SetupResult, apply_setup
from ledger.certificates import Envelope, LocalSigner, verify_dsse
from tests.fixtures.openbao import OpenBaoServer
from tests.support.canary import find_canaries, scan_tree
from tests.support.served import serving
from tests.unit.service.test_service import API, audit_body

pytestmark = pytest.mark.vault

_MAIN = "from enclave.cli import main; main()"
GRANTS = "/internal/v1/grants"
CANARIES = ("CANARY-PROC-2f9c1e", "CANARY-CLAIM-8b41d0", "CANARY-SHARD-51aa7e")


def exports(lines: list[str]) -> dict[str, str]:
    env = {}
    for line in lines:
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0]
    return env


def _base_env() -> dict[str, str]:
    """The process environment without any Vault or enclave setting of the test run."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VAULT_", "REPLAY_ENCLAVE_")) and k != "BAO_TOKEN"
    }


@dataclasses.dataclass
class Plane:
    home: Home
    setup: SetupResult
    service_env: dict[str, str]
    worker_env: dict[str, str]
    url: str
    analyst: str
    workers: dict[str, str]
    specimens: dict[str, str]
    audit_log: Path
    root_token: str
    requesters: list[str]
    requests: int = 0

    def runtime(self) -> Runtime:
        return Runtime.open(self.home, env=self.service_env)

    def request_audit(self, specimen: str = "procurement", **changes: Any) -> str:
        # one requester per audit: each has its own disclosure budget (5 audits a day)
        self.requests += 1
        response = requests.post(
            self.url + f"{API}/audits",
            headers={"Authorization": f"Bearer {self.requesters[self.requests % 16]}"},
            json=audit_body(self.specimens[specimen], **changes),
            timeout=60,
        )
        assert response.status_code == 202, response.text
        return str(response.json()["audit_id"])

    def ask(self, worker: str | None, job_id: str, fencing_token: int) -> requests.Response:
        headers = {} if worker is None else {"Authorization": f"Bearer {self.workers[worker]}"}
        return requests.post(
            self.url + GRANTS,
            headers=headers,
            json={"job_id": job_id, "fencing_token": fencing_token},
            timeout=60,
        )

    def decrypts_logged(self) -> int:
        """Decrypt requests in OpenBao's audit log (each also logs its response)."""
        count = 0
        for line in self.audit_log.read_text().splitlines():
            entry = json.loads(line)
            path = str(entry.get("request", {}).get("path", ""))
            count += entry.get("type") == "request" and path.startswith("transit/decrypt/")
        return count


def _build_home(
    root: Path, env: dict[str, str]
) -> tuple[Home, dict[str, str], list[str], dict[str, str]]:
    home = Home.init(root)
    with Runtime.open(home, env=env) as runtime:
        specimens = capture_incidents(runtime)
        globex = capture(
            runtime,
            claims.AGENT,
            claims.BASELINE_INPUT["inputs"],
            tenant_id="globex",
            seed=claims.BASELINE_INPUT["seed"],
        )
        specimens["globex-claims"] = globex.specimen_id
        now = utc_now()
        for path in sorted((policies_root() / "interventions").glob("*.toml")):
            policy = load_policy_file(runtime, path, now=now)
            assert validate_policy(runtime, policy.id, now=now).ok
            activate_policy(runtime, policy.id, now=now)
        analysts = [
            add_analyst(
                runtime, name, tenant="acme", roles=["auditor", "restricted-clearance"], now=now
            )[1]
            for name in ["alice"] + [f"a{n}" for n in range(15)]
        ]
        from enclave.service import add_worker

        workers = {name: add_worker(runtime, name, now=now) for name in ("w1", "w2")}
    return home, specimens, analysts, workers


@pytest.fixture(scope="module")
def plane(openbao: OpenBaoServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme", "globex"])
    service_env = {"REPLAY_ENCLAVE_KEY_PROVIDER": "transit", **exports(setup.export_lines())}
    root = tmp_path_factory.mktemp("plane")
    home, specimens, analysts, workers = _build_home(root / "home", service_env)
    token_file = root / "w1.token"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(workers["w1"])
    with serving(home.root, {**_base_env(), **service_env}) as (_process, port):
        url = f"http://127.0.0.1:{port}"
        # what a worker host holds: where the home and the servers are, and its token file
        worker_env = {
            "REPLAY_ENCLAVE_HOME": str(home.root),
            "REPLAY_ENCLAVE_KEY_PROVIDER": "transit",
            "VAULT_ADDR": openbao.addr,
            "REPLAY_ENCLAVE_GRANT_SERVICE": url,
            "REPLAY_ENCLAVE_WORKER_TOKEN_FILE": str(token_file),
        }
        yield Plane(
            home,
            setup,
            service_env,
            worker_env,
            url,
            analysts[0],
            workers,
            specimens,
            Path(openbao.audit_log),
            openbao.root_token,
            analysts,
        )


@dataclasses.dataclass(frozen=True)
class Held:
    job_id: str
    fencing_token: int


def _claim(
    plane: Plane, audit_id: str, worker_id: str, *, ago: float = 0.0, lease: float = 60.0
) -> Held:
    """Lease the audit's first job to ``worker_id`` as ``jobs.claim`` does (the same
    update), but for this audit: other tests' audits may still be queued."""
    now = utc_now() - timedelta(seconds=ago)
    with plane.runtime() as runtime, runtime.ledger.engine.begin() as conn:
        job_id = conn.execute(
            sa.text("SELECT id FROM jobs WHERE audit_id = :a AND kind = 'audit'"),
            {"a": audit_id},
        ).scalar_one()
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = 'leased', attempts = attempts + 1, "
                "fencing_token = fencing_token + 1, lease_owner = :owner, "
                "lease_expires_at = :expires, updated_at = :now WHERE id = :id"
            ),
            {"owner": worker_id, "expires": stamp(now, lease), "now": stamp(now), "id": job_id},
        )
        token = conn.execute(
            sa.text("SELECT fencing_token FROM jobs WHERE id = :id"), {"id": job_id}
        ).scalar_one()
    return Held(str(job_id), int(token))


def _run_worker_process(plane: Plane) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "worker", "--once", "--lease-seconds", "120"],
        env={**_base_env(), **plane.worker_env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _status(plane: Plane, audit_id: str) -> dict[str, Any]:
    response = requests.get(
        plane.url + f"{API}/audits/{audit_id}",
        headers={"Authorization": f"Bearer {plane.analyst}"},
        timeout=60,
    )
    result: dict[str, Any] = response.json()
    return result


def _wrapped(plane: Plane, key: str) -> tuple[str, str, Any]:
    with plane.runtime() as runtime:
        record = runtime.ledger.get_specimen(plane.specimens[key])
        wrapped = runtime.payloads.wrapped_key(record.tenant_id, record.specimen_id)
    return record.tenant_id, record.specimen_id, wrapped


# -- 1. per-tenant brokers ----------------------------------------------------------------


def test_one_tenants_broker_cannot_touch_another_tenants_key(plane: Plane) -> None:
    def broker_of(tenant: str) -> TransitKeyProvider:
        cred = plane.setup.credentials_for("broker", tenant=tenant)
        return TransitKeyProvider(
            settings=VaultSettings(
                addr=plane.worker_env["VAULT_ADDR"], role_id=cred.role_id, secret_id=cred.secret_id
            )
        )

    acme, globex = broker_of("acme"), broker_of("globex")
    a_tenant, a_spec, a_wrapped = _wrapped(plane, "procurement")
    g_tenant, g_spec, g_wrapped = _wrapped(plane, "globex-claims")
    now = utc_now()
    # each reaches its own tenant's key ...
    acme.issue_grant(a_tenant, a_spec, a_wrapped, job_id="j", ttl_seconds=5, now=now).revoke()
    globex.issue_grant(g_tenant, g_spec, g_wrapped, job_id="j", ttl_seconds=5, now=now).revoke()
    # ... and is refused (403) on the other's: decrypt and admission HMAC alike
    with pytest.raises(GrantRefused):
        acme.issue_grant(g_tenant, g_spec, g_wrapped, job_id="j", ttl_seconds=5, now=now)
    with pytest.raises(GrantRefused):
        globex.issue_grant(a_tenant, a_spec, a_wrapped, job_id="j", ttl_seconds=5, now=now)
    with pytest.raises(Refused):
        acme.admission_mac(g_tenant, "eA==")
    # the policies name one key each: no glob over tenants anywhere in the broker's rules
    admin = admin_client(plane.worker_env["VAULT_ADDR"], plane.root_token)
    for name in ("replay-enclave-broker", "replay-enclave-broker-acme"):
        policy = admin.adapter.get(f"/v1/sys/policies/acl/{name}")["data"]["policy"]
        assert "replay-enclave-*" not in policy and "globex" not in policy


def test_a_service_with_per_tenant_identities_serves_each_tenant_through_its_own(
    plane: Plane,
) -> None:
    # the operator gives this service acme's broker identity only (no governance role)
    env = {
        k: v
        for k, v in plane.service_env.items()
        if not k.endswith("_BROKER") and not k.endswith("_BROKER_GLOBEX")
    }
    assert any(k.endswith("_BROKER_ACME") for k in env)
    a_tenant, a_spec, a_wrapped = _wrapped(plane, "procurement")
    g_tenant, g_spec, g_wrapped = _wrapped(plane, "globex-claims")
    with Runtime.open(plane.home, env=env) as runtime:
        grant = runtime.broker.issue_grant(
            a_tenant, a_spec, a_wrapped, job_id="j", ttl_seconds=5, now=utc_now()
        )
        grant.revoke()
        with pytest.raises(BadInput):  # no identity at all for globex here
            runtime.broker.issue_grant(
                g_tenant, g_spec, g_wrapped, job_id="j", ttl_seconds=5, now=utc_now()
            )
        with pytest.raises(Refused):  # a broker is a broker: no capture, no rotation
            runtime.broker.new_data_key(a_tenant, "sp-new")


# -- 2. + 6. the worker host holds nothing that decrypts; the audit still completes -------


def test_vault_mode_audit_completes_with_a_worker_that_holds_no_vault_credential(
    plane: Plane,
) -> None:
    audit_id = plane.request_audit()
    done = _run_worker_process(plane)
    status = _status(plane, audit_id)
    assert status["status"] == "COMPLETED", (status, done.stderr[-2000:])
    verified = requests.get(
        plane.url + f"{API}/certificates/{audit_id}/verify",
        headers={"Authorization": f"Bearer {plane.analyst}"},
        timeout=60,
    ).json()
    assert verified["ok"] is True
    with plane.runtime() as runtime:
        issued = [e.body for e in runtime.ledger.entries(kind="grant.issued")]
        used = [e.body for e in runtime.ledger.entries(kind="grant.used")]
    mine = [g for g in issued if g["audit_id"] == audit_id]
    assert mine and all(g["worker"] == "w1" and g["accessor"] for g in mine)
    assert {g["accessor"] for g in mine} <= {u["accessor"] for u in used}
    # what the worker host holds: no Vault token, no AppRole, nothing in the home's config
    held = {**plane.worker_env, **_config_strings(plane.home)}
    assert not any(k.startswith(("VAULT_TOKEN", "REPLAY_ENCLAVE_VAULT_")) for k in held)
    for secret in _vault_secrets(plane.setup):
        assert secret not in " ".join(held.values())
        assert secret not in done.stdout + done.stderr
    # and with it, no specimen decrypts: no token at all is 403 on every decrypt
    adapter = anonymous_adapter(plane.worker_env["VAULT_ADDR"])
    for key in plane.specimens:
        tenant, specimen, wrapped = _wrapped(plane, key)
        body = {"ciphertext": wrapped.blob, "context": derivation_context(tenant, specimen)}
        answer = adapter.post(
            f"/v1/transit/decrypt/replay-enclave-{tenant}", json=body, raise_exception=False
        )
        assert answer.status_code in (400, 403)
    # a runtime opened the way the worker opens it has no Vault identity to give
    from enclave.cli import service_grants

    worker_rt = Runtime.open(
        plane.home,
        env=plane.worker_env,
        grant_source=service_grants(plane.home, plane.worker_env, plane.url, plane.workers["w1"]),
        vault_identities=False,
    )
    with worker_rt, pytest.raises(Refused):
        worker_rt.broker  # noqa: B018 - the property is the attempt
    log = plane.audit_log.read_bytes()
    assert not find_canaries(log, CANARIES)
    assert not any(scan_tree(plane.home.root).values())


def _config_strings(home: Home) -> dict[str, str]:
    text = (home.root / "config.toml").read_text() if (home.root / "config.toml").exists() else ""
    return {"config.toml": text}


def _vault_secrets(setup: SetupResult) -> list[str]:
    return [c.secret_id for c in setup.credentials if c.secret_id]


# -- 3. refused requests mint nothing -----------------------------------------------------


def _assert_refused(plane: Plane, response: requests.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert "wrapping_token" not in response.text


def test_grant_requests_outside_a_held_lease_are_refused_and_mint_nothing(plane: Plane) -> None:
    audit_id = plane.request_audit(samples=2)
    before = plane.decrypts_logged()
    job = _claim(plane, audit_id, "w2/host:1")
    # not leased by you
    _assert_refused(plane, plane.ask("w1", job.job_id, job.fencing_token), 409, "lease_not_held")
    # no worker token, an analyst's token
    assert plane.ask(None, job.job_id, job.fencing_token).status_code == 401
    analyst = requests.post(
        plane.url + GRANTS,
        headers={"Authorization": f"Bearer {plane.analyst}"},
        json={"job_id": job.job_id, "fencing_token": job.fencing_token},
        timeout=60,
    )
    assert analyst.status_code == 401
    # a stale fencing token
    stale = plane.ask("w2", job.job_id, job.fencing_token - 1)
    _assert_refused(plane, stale, 409, "lease_not_held")
    assert plane.decrypts_logged() == before
    # the holder gets exactly one grant for exactly its job's specimen
    granted = plane.ask("w2", job.job_id, job.fencing_token)
    assert granted.status_code == 200, granted.text
    assert granted.json()["specimen_id"] == plane.specimens["procurement"]
    assert 1 <= granted.json()["ttl_seconds"] <= 60
    assert plane.decrypts_logged() == before + 1
    # the ledger records the accessor, never the token: nowhere in the home's files
    token = granted.json()["wrapping_token"].encode()
    for path in plane.home.root.rglob("*"):
        assert not path.is_file() or token not in path.read_bytes(), path.name
    with plane.runtime() as runtime:
        issued = runtime.ledger.entries(kind="grant.issued", subject=job.job_id)
    assert [e.body["accessor"] for e in issued] == [granted.json()["accessor"]]
    _release(plane, job)


def test_an_expired_lease_gets_nothing(plane: Plane) -> None:
    audit_id = plane.request_audit(samples=2)
    before = plane.decrypts_logged()
    job = _claim(plane, audit_id, "w1/host:2", ago=120, lease=60)  # its lease ended a minute ago
    _assert_refused(plane, plane.ask("w1", job.job_id, job.fencing_token), 409, "lease_not_held")
    assert plane.decrypts_logged() == before
    _release(plane, job)


def test_a_cancelled_audit_gets_nothing_and_its_unused_grant_is_revoked(plane: Plane) -> None:
    audit_id = plane.request_audit(samples=2)
    job = _claim(plane, audit_id, "w1/host:3")
    # a grant handed over but not yet used when the audit is cancelled
    handed = plane.ask("w1", job.job_id, job.fencing_token)
    assert handed.status_code == 200, handed.text
    tenant, specimen, _ = _wrapped(plane, "procurement")
    before = plane.decrypts_logged()
    cancelled = requests.post(
        plane.url + f"{API}/audits/{audit_id}/cancel",
        headers={"Authorization": f"Bearer {plane.requesters[plane.requests % 16]}"},  # noqa: E501
        timeout=60,
    )
    assert cancelled.status_code == 200, cancelled.text
    _assert_refused(plane, plane.ask("w1", job.job_id, job.fencing_token), 409, "lease_not_held")
    late = TransitGrant.received(
        adapter=anonymous_adapter(plane.worker_env["VAULT_ADDR"]),
        token=handed.json()["wrapping_token"],
        accessor=handed.json()["accessor"],
        specimen_id=specimen,
        job_id=job.job_id,
        expires_at=utc_now() + timedelta(seconds=60),
        expected_path=f"transit/decrypt/replay-enclave-{tenant}",
    )
    with pytest.raises(GrantRefused):  # revoked by the cancel
        late.redeem(now=utc_now())
    # even a worker that rewrites its job row back to 'leased' meets the audit's status
    with plane.runtime() as runtime, runtime.ledger.engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE jobs SET status = 'leased', fencing_token = :t, "
                "lease_expires_at = :e WHERE id = :id"
            ),
            {"t": job.fencing_token, "e": stamp(utc_now(), 60), "id": job.job_id},
        )
    _assert_refused(plane, plane.ask("w1", job.job_id, job.fencing_token), 409, "audit_not_running")
    assert plane.decrypts_logged() == before


@pytest.mark.parametrize("binding", ["none", "forged", "moved"])
def test_a_forged_job_row_gets_nothing(plane: Plane, binding: str) -> None:
    """A worker shares the database: it inserts an audit and a leased job of its own for a
    specimen nobody admitted (with no binding, a made-up one, or another audit's)."""
    before = plane.decrypts_logged()
    real = plane.request_audit(samples=2) if binding == "moved" else None
    forged = f"au-forged-{binding}"
    lease = (utc_now() + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    at = utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    specimen = plane.specimens["claims"]
    with plane.runtime() as runtime, runtime.ledger.engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO audits (id, tenant_id, specimen_id, requester, purpose, request_json,"
                " status, progress_done, progress_total, created_at, updated_at) VALUES "
                "(:id, 'acme', :sp, 'alice', 'x', '{}', 'RUNNING', 0, 1, :at, :at)"
            ),
            {"id": forged, "sp": specimen, "at": at},
        )
        conn.execute(
            sa.text(
                "INSERT INTO jobs (id, audit_id, kind, payload_json, status, attempts, "
                "max_attempts, fencing_token, lease_owner, lease_expires_at, idempotency_key, "
                "available_at, created_at, updated_at) VALUES (:id, :audit, 'audit', '{}', "
                "'leased', 1, 5, 7, 'w1/host:9', :lease, :id, :at, :at, :at)"
            ),
            {"id": f"jb-forged-{binding}", "audit": forged, "lease": lease, "at": at},
        )
        if binding == "forged":
            conn.execute(
                sa.text(
                    "INSERT INTO admissions VALUES (:id, 'acme', :sp, :at, "
                    "'vault:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=')"
                ),
                {"id": forged, "sp": specimen, "at": at[:19] + "Z"},
            )
        if binding == "moved":
            row = conn.execute(
                sa.text("SELECT admitted_at, mac FROM admissions WHERE audit_id = :id"),
                {"id": real},
            ).one()
            conn.execute(
                sa.text("INSERT INTO admissions VALUES (:id, 'acme', :sp, :at, :mac)"),
                {"id": forged, "sp": specimen, "at": row[0], "mac": row[1]},
            )
    answer = plane.ask("w1", f"jb-forged-{binding}", 7)
    _assert_refused(plane, answer, 403, "not_admitted")
    assert plane.decrypts_logged() == before


# -- 4. a grant for X is no grant for Y; a compromised worker gets nothing more ------------


def test_compromised_worker_holds_nothing_that_opens_another_specimen(plane: Plane) -> None:
    from enclave.cli import service_grants

    audit_id = plane.request_audit(samples=2)
    job = _claim(plane, audit_id, "w1/host:4")
    grants = service_grants(plane.home, plane.worker_env, plane.url, plane.workers["w1"])
    tenant, x, wrapped_x = _wrapped(plane, "procurement")
    _, y, wrapped_y = _wrapped(plane, "claims")
    bound = grants.for_job(job.job_id, job.fencing_token)
    # a grant for X asked while opening Y is refused before any token is used
    with pytest.raises(GrantRefused):
        bound.grant(tenant, y, wrapped_y, job_id=job.job_id, ttl_seconds=60, now=utc_now())
    # the attacker reads the worker's memory: the worker token and every wrapping token
    answer = plane.ask("w1", job.job_id, job.fencing_token).json()
    token = answer["wrapping_token"]
    grant = TransitGrant.received(
        adapter=anonymous_adapter(plane.worker_env["VAULT_ADDR"]),
        token=token,
        accessor=answer["accessor"],
        specimen_id=x,
        job_id=job.job_id,
        expires_at=utc_now() + timedelta(seconds=60),
        expected_path=f"transit/decrypt/replay-enclave-{tenant}",
    )
    key_x = grant.redeem(now=utc_now())
    with plane.runtime() as runtime:
        runtime.payloads.read_fields(tenant, x, data_key=key_x)  # X's key opens X ...
        with pytest.raises(Exception):  # noqa: B017,PT011 - any failure: Y stays sealed
            runtime.payloads.read_fields(tenant, y, data_key=key_x)  # ... and not Y
    adapter = anonymous_adapter(plane.worker_env["VAULT_ADDR"])
    # the spent wrapping token: no second unwrap, and it is no Vault token for a decrypt
    again = adapter.post(
        "/v1/sys/wrapping/unwrap", headers={"X-Vault-Token": token}, raise_exception=False
    )
    assert again.status_code in (400, 403)
    for wrapped, specimen in ((wrapped_x, x), (wrapped_y, y)):
        decrypt = adapter.post(
            f"/v1/transit/decrypt/replay-enclave-{tenant}",
            json={"ciphertext": wrapped.blob, "context": derivation_context(tenant, specimen)},
            headers={"X-Vault-Token": token},
            raise_exception=False,
        )
        assert decrypt.status_code in (400, 403)
    # the worker token: jobs it does not hold (another worker's), or no longer holds
    other = _claim(plane, plane.request_audit(samples=2), "w2/host:5")
    before = plane.decrypts_logged()
    _assert_refused(
        plane, plane.ask("w1", other.job_id, other.fencing_token), 409, "lease_not_held"
    )
    _release(plane, job)
    _assert_refused(plane, plane.ask("w1", job.job_id, job.fencing_token), 409, "lease_not_held")
    # and the Y audit it never claimed yields nothing either
    assert plane.decrypts_logged() == before
    _release(plane, other)


def _release(plane: Plane, job: Held) -> None:
    """End a job a test leased by hand (its audit fails closed): the lease is gone."""
    from enclave.jobs import fail

    with plane.runtime() as runtime:
        fail(
            runtime.ledger.engine,
            job.job_id,
            job.fencing_token,
            now=utc_now(),
            error_code="test_released",
            retry=False,
        )


# -- the worker command in Vault mode -------------------------------------------------------


def _worker_cli(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    home = Home.init(tmp_path / "home")
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "worker", "--once", "--home", str(home.root)],
        env={**_base_env(), "REPLAY_ENCLAVE_KEY_PROVIDER": "transit", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_vault_mode_worker_without_the_grant_service_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    done = _worker_cli(tmp_path, {"VAULT_ADDR": "http://127.0.0.1:9"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "REPLAY_ENCLAVE_GRANT_SERVICE" in done.stderr


def test_a_worker_token_file_others_can_read_is_refused_without_echoing_it(
    tmp_path: Path,
) -> None:
    token = "rew_w1:" + "CANARY-PROC-2f9c1e" + "x" * 25
    path = tmp_path / "token"
    path.write_text(token)
    path.chmod(0o644)
    done = _worker_cli(
        tmp_path,
        {
            "VAULT_ADDR": "http://127.0.0.1:9",
            "REPLAY_ENCLAVE_GRANT_SERVICE": "http://127.0.0.1:9",
            "REPLAY_ENCLAVE_WORKER_TOKEN_FILE": str(path),
        },
    )
    assert done.returncode == 2 and "0600" in done.stderr and done.stderr.count("\n") == 1
    assert "CANARY" not in done.stdout + done.stderr


# -- 5. a worker on another host: digest keys and signatures from the service ------------

DIGEST_KEYS = "/internal/v1/digest-keys"
SIGNATURES = "/internal/v1/signatures"


def _post(plane: Plane, worker: str | None, path: str, body: dict[str, Any]) -> requests.Response:
    headers = {} if worker is None else {"Authorization": f"Bearer {plane.workers[worker]}"}
    return requests.post(plane.url + path, headers=headers, json=body, timeout=60)


def _held_as(plane: Plane, job: Held, kind: str) -> None:
    with plane.runtime() as runtime, runtime.ledger.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE jobs SET kind = :k WHERE id = :id"), {"k": kind, "id": job.job_id}
        )


def _completed_predicate(plane: Plane) -> dict[str, Any]:
    """The predicate of a certificate the service issued for the procurement specimen."""
    with plane.runtime() as runtime, runtime.ledger.engine.begin() as conn:
        found = conn.execute(
            sa.text(
                "SELECT certificate_json FROM audits WHERE specimen_id = :sp AND "
                "status = 'COMPLETED'"
            ),
            {"sp": plane.specimens["procurement"]},
        ).first()
    if found is None:
        audit_id = plane.request_audit()
        assert _run_worker_process(plane).returncode == 0
        assert _status(plane, audit_id)["status"] == "COMPLETED"
        return _completed_predicate(plane)
    payload = json.loads(base64.b64decode(json.loads(found[0])["payload"]))
    predicate: dict[str, Any] = payload["predicate"]
    return predicate


def test_the_service_hands_a_claimed_job_its_tenants_digest_key_and_nothing_else(
    plane: Plane,
) -> None:
    audit_id = plane.request_audit(samples=2)
    job = _claim(plane, audit_id, "w1/host:5")
    claim = {"job_id": job.job_id, "fencing_token": job.fencing_token}
    # refused outside the held lease, like a grant
    assert _post(plane, None, DIGEST_KEYS, claim).status_code == 401
    _assert_refused(plane, _post(plane, "w2", DIGEST_KEYS, claim), 409, "lease_not_held")
    stale = {**claim, "fencing_token": job.fencing_token - 1}
    _assert_refused(plane, _post(plane, "w1", DIGEST_KEYS, stale), 409, "lease_not_held")
    # the holder gets exactly the tenant's secret the home keys its digests with
    answer = _post(plane, "w1", DIGEST_KEYS, claim)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.json()["tenant_id"] == "acme"
    with plane.runtime() as runtime:
        keyring = runtime.digests
        assert isinstance(keyring, DigestKeys)
        assert base64.b64decode(answer.json()["digest_key"]) == keyring.secret_of("acme")
        issued = runtime.ledger.entries(kind="digest_key.issued", subject=job.job_id)
    assert [(e.body["worker"], e.body["tenant_id"]) for e in issued] == [("w1", "acme")]
    assert answer.json()["digest_key"] not in json.dumps([e.body for e in issued])
    _release(plane, job)


def test_the_service_signs_only_a_held_finalizers_valid_statement_of_its_own_audit(
    plane: Plane,
) -> None:
    predicate = _completed_predicate(plane)
    audit_id = plane.request_audit(samples=2)
    job = _claim(plane, audit_id, "w1/host:6")
    with plane.runtime() as runtime:
        record = runtime.ledger.get_specimen(plane.specimens["procurement"])
        key = signing_key(runtime)
        public = {key.keyid: key.public_key}
    body = {
        "job_id": job.job_id,
        "fencing_token": job.fencing_token,
        "specimen_id": record.specimen_id,
        "manifest_digest": record.manifest_digest,
        "predicate": predicate,
    }
    # an audit job is not a finalizer
    _assert_refused(plane, _post(plane, "w1", SIGNATURES, body), 409, "not_this_audit")
    _held_as(plane, job, "finalize")
    assert _post(plane, None, SIGNATURES, body).status_code == 401
    _assert_refused(plane, _post(plane, "w2", SIGNATURES, body), 409, "lease_not_held")
    # another specimen, or another manifest digest, is not this audit's statement
    other = {**body, "specimen_id": plane.specimens["claims"]}
    _assert_refused(plane, _post(plane, "w1", SIGNATURES, other), 409, "not_this_audit")
    moved = {**body, "manifest_digest": "sha256:" + "0" * 64}
    _assert_refused(plane, _post(plane, "w1", SIGNATURES, moved), 409, "not_this_audit")
    # figures that break the predicate's rules: refused, naming the place, not the value
    effect = dict(predicate["effect"])
    effect["flip_rate"] = 0.123456789
    broken = _post(plane, "w1", SIGNATURES, {**body, "predicate": {**predicate, "effect": effect}})
    assert broken.status_code == 422, broken.text
    assert broken.json()["error"]["code"] == "predicate_invalid"
    assert "/predicate/effect" in broken.text and "0.123456789" not in broken.text
    # the held finalizer's valid statement is signed by the home's key, as its issuer
    signed = _post(plane, "w1", SIGNATURES, body)
    assert signed.status_code == 200, signed.text
    envelope = Envelope.from_dict(signed.json()["envelope"])
    assert verify_dsse(envelope, public) == {key.keyid}
    statement = json.loads(envelope.payload)
    assert statement["predicate"] == {**predicate, "issuer": envelope.signatures[0].keyid}
    assert statement["subject"][0]["digest"]["sha256"] == record.manifest_digest[7:]
    _release(plane, job)


def test_a_worker_refuses_a_signature_over_another_statement_or_another_tenants_key(
    plane: Plane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the worker checks in the service's answers (the service itself is trusted to
    check; this is the worker's own guard against an answer for something else)."""
    from enclave.cli import service_grants
    from enclave.keys import ServiceGrants

    predicate = _completed_predicate(plane)
    with plane.runtime() as runtime:
        record = runtime.ledger.get_specimen(plane.specimens["procurement"])
        key = signing_key(runtime)
    link = service_grants(plane.home, plane.worker_env, plane.url, plane.workers["w1"])
    link = link.for_job("jb-x", 1)
    assert isinstance(link, ServiceGrants)
    other = {**predicate, "issued_at": "2001-01-01T00:00:00Z"}
    forged = LocalSigner(key).sign_certificate(
        specimen_id=record.specimen_id, manifest_digest=record.manifest_digest, predicate=other
    )
    monkeypatch.setattr(ServiceGrants, "_ask", lambda self, path, **_: {"envelope": forged})
    with pytest.raises(Refused) as refused:
        link.signer().sign_certificate(
            specimen_id=record.specimen_id,
            manifest_digest=record.manifest_digest,
            predicate=predicate,
        )
    assert refused.value.code == "signature_refused"
    secret = base64.b64encode(b"k" * 32).decode()
    monkeypatch.setattr(
        ServiceGrants, "_ask", lambda self, path, **_: {"tenant_id": "globex", "digest_key": secret}
    )
    with pytest.raises(GrantRefused):
        link.digest_keys().for_tenant("acme")


def test_a_vault_mode_audit_uses_the_services_digest_keys_and_signature(plane: Plane) -> None:
    audit_id = plane.request_audit()
    done = _run_worker_process(plane)
    assert _status(plane, audit_id)["status"] == "COMPLETED", done.stderr[-2000:]
    with plane.runtime() as runtime:
        jobs = {
            str(row[0]): str(row[1])
            for row in runtime.ledger.engine.connect().execute(
                sa.text("SELECT id, kind FROM jobs WHERE audit_id = :a"), {"a": audit_id}
            )
        }
        given = {e.subject for e in runtime.ledger.entries(kind="digest_key.issued")}
        key = signing_key(runtime)
        cert = runtime.ledger.entries(kind="certificate.issued", subject=audit_id)
    # every job of the audit (prepare, batches, finalize) asked for its tenant's key
    assert set(jobs) <= given
    assert len(cert) == 1
    envelope = json.loads(
        requests.get(
            plane.url + f"{API}/certificates/{audit_id}",
            headers={"Authorization": f"Bearer {plane.analyst}"},
            timeout=60,
        ).text
    )
    assert Envelope.from_dict(envelope).signatures[0].keyid == key.keyid
