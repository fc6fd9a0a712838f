"""The service as an attacker and an operator meet it: requests are authenticated before
their bodies are read and bodies and headers are bounded (against a real ``uvicorn``
process, where memory is measured); only the requester or a tenant admin cancels, and a
cancelled audit that never ran gives its disclosure budget back; tenant and clearance
walls hold for everything derived from a specimen; the ledger views are the operator's;
request bodies are strict; no redirect reflects a ``Host`` header."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime, utc_now
from enclave.governance import add_analyst
from enclave.service import create_app
from tests.fixtures.postgres import PostgresServer
from tests.support.served import free_port, serving
from tests.unit.service.test_service import API, audit_body, build_home, error_code

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

MIB = 1024 * 1024
EXTRA_ROLES = {
    "ada": ("acme", ["tenant-admin"]),
    "val": ("acme", ["viewer"]),
    "cleo": ("acme", ["auditor", "restricted-clearance"]),
    "rota": ("acme", ["viewer"]),
}


@dataclasses.dataclass
class World:
    home: Home
    specimens: dict[str, str]
    tokens: dict[str, str]
    client: TestClient

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def entries(self, kind: str, subject: str | None = None) -> list[dict[str, Any]]:
        with Runtime.open(self.home, env={}) as runtime:
            return [e.body for e in runtime.ledger.entries(kind=kind, subject=subject)]


def _add_analysts(home: Home, roles: dict[str, tuple[str, list[str]]]) -> dict[str, str]:
    tokens = {}
    with Runtime.open(home, env={}) as runtime:
        for name, (tenant, granted) in roles.items():
            _, tokens[name] = add_analyst(
                runtime, name, tenant=tenant, roles=granted, now=utc_now()
            )
    return tokens


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home, specimens, tokens = build_home(tmp_path_factory.mktemp("hardening") / "home")
    tokens |= _add_analysts(home, EXTRA_ROLES)
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        yield World(home, specimens, tokens, client)


def request_audit(world: World, who: str, **changes: Any) -> dict[str, Any]:
    response = world.client.post(
        f"{API}/audits",
        headers=world.auth(who),
        json=audit_body(world.specimens["procurement"], **changes),
    )
    assert response.status_code == 202, response.text
    result: dict[str, Any] = response.json()
    return result


# -- a real server process ----------------------------------------------------------------

_MAIN = "from enclave.cli import main; main()"


@dataclasses.dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    token: str

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = Home.init(tmp_path_factory.mktemp("served") / "home")
    token = _add_analysts(home, {"alice": ("acme", ["auditor"])})["alice"]
    env = {**os.environ, "REPLAY_ENCLAVE_HOME": str(home.root)}
    with serving(home.root, env) as (process, port):
        yield Served(process, port, token)


def _complete(answer: bytes) -> bool:
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def _raw_request(
    served: Served, head: bytes, body_bytes: int, *, chunk: int = MIB
) -> tuple[int, bytes]:
    """Send ``head`` then up to ``body_bytes`` of body from a thread while reading the
    answer; returns (status, response bytes). The sender stops when the server closes."""
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    sock.sendall(head)

    def send_body() -> None:
        block = b"a" * chunk
        sent = 0
        try:
            while sent < body_bytes:
                sock.sendall(block[: body_bytes - sent])
                sent += len(block)
        except OSError:
            return  # the server answered and closed: what it never read it never held

    sender = threading.Thread(target=send_body, daemon=True)
    sender.start()
    answer = b""
    try:
        while not _complete(answer):
            part = sock.recv(65536)
            if not part:
                break
            answer += part
    finally:
        sender.join(timeout=60)
        sock.close()
    status = int(answer.split(b" ", 2)[1])
    return status, answer


def _post_head(port: int, length: int, token: str | None = None) -> bytes:
    lines = [
        "POST /api/v1/audits HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        f"Content-Length: {length}",
    ]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# -- 1. bounded requests, authenticated before their bodies are read ------------------------


def test_unauthenticated_huge_post_is_401_and_costs_no_memory(served: Served) -> None:
    size = 100 * MIB
    before = served.rss_kib()
    status, _ = _raw_request(served, _post_head(served.port, size), size)
    after = served.rss_kib()
    assert status == 401
    assert after - before < 8 * 1024, (before, after)
    # the server is still there and still answers
    status, _ = _raw_request(served, _post_head(served.port, 0), 0)
    assert status == 401


def test_authenticated_oversize_body_is_413_before_it_is_read(served: Served) -> None:
    size = 100 * MIB
    before = served.rss_kib()
    status, answer = _raw_request(served, _post_head(served.port, size, served.token), size)
    assert status == 413 and b'"too_large"' in answer
    assert served.rss_kib() - before < 8 * 1024


def test_oversize_headers_are_refused_by_the_server(served: Served) -> None:
    head = (
        f"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nX-Pad: {'p' * (64 * 1024)}\r\n"
        f"Authorization: Bearer {served.token}\r\n\r\n"
    ).encode()
    status, _ = _raw_request(served, head, 0)
    assert status in (400, 431)


def test_oversize_headers_are_refused_in_process(world: World) -> None:
    response = world.client.get(
        f"{API}/whoami", headers={**world.auth("alice"), "X-Pad": "p" * (40 * 1024)}
    )
    assert response.status_code == 431 and error_code(response) == "headers_too_large"


def test_chunked_oversize_body_is_413(world: World) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"purpose": "'
        for _ in range(64):
            yield b"a" * 4096
        yield b'"}'

    response = world.client.post(
        f"{API}/audits",
        headers={**world.auth("alice"), "Content-Type": "application/json"},
        content=chunks(),
    )
    assert response.status_code == 413 and error_code(response) == "too_large"
    assert not world.entries("audit.admitted", world.specimens["procurement"]) or all(
        e["purpose"] != "a" for e in world.entries("audit.admitted")
    )


def test_unauthenticated_body_is_never_parsed(world: World) -> None:
    # malformed JSON from a stranger: 401, not 422 (the body was not looked at)
    response = world.client.post(
        f"{API}/audits",
        headers={"Content-Type": "application/json"},
        content=b'{"specimen_id": broken',
    )
    assert response.status_code == 401 and error_code(response) == "unauthenticated"


# -- 2. who may cancel, and the budget of work that never ran -------------------------------


def test_only_the_requester_or_a_tenant_admin_cancels(world: World) -> None:
    first = request_audit(world, "alice", seed=11)
    colleague = world.client.post(
        f"{API}/audits/{first['audit_id']}/cancel", headers=world.auth("cleo")
    )
    assert colleague.status_code == 403 and error_code(colleague) == "not_permitted"
    viewer = world.client.post(
        f"{API}/audits/{first['audit_id']}/cancel", headers=world.auth("val")
    )
    assert viewer.status_code == 403
    admin = world.client.post(
        f"{API}/audits/{first['audit_id']}/cancel",
        headers=world.auth("ada"),
        json={"reason": "duplicate"},
    )
    assert admin.status_code == 200 and admin.json()["status"] == "CANCELLED"
    second = request_audit(world, "alice", seed=12)
    own = world.client.post(
        f"{API}/audits/{second['audit_id']}/cancel", headers=world.auth("alice")
    )
    assert own.status_code == 200 and own.json()["status"] == "CANCELLED"
    recorded = {e["audit_id"]: e for e in world.entries("audit.cancelled")}
    assert recorded[first["audit_id"]]["by"] == "ada"
    assert recorded[first["audit_id"]]["reason"] == "duplicate"
    assert recorded[second["audit_id"]]["by"] == "alice"
    assert recorded[second["audit_id"]]["reason"] == "withdrawn"


def test_a_cancel_reason_is_a_code_never_free_text(world: World) -> None:
    audit = request_audit(world, "alice", seed=13)
    response = world.client.post(
        f"{API}/audits/{audit['audit_id']}/cancel",
        headers=world.auth("alice"),
        json={"reason": "CANARY-PROC-2f9c1e"},
    )
    assert response.status_code == 422 and "CANARY" not in response.text
    status = world.client.get(f"{API}/audits/{audit['audit_id']}", headers=world.auth("alice"))
    assert status.json()["status"] == "QUEUED"


def _claims_body(world: World) -> dict[str, Any]:
    return audit_body(
        world.specimens["claims"],
        call_id="main/fraud_score#0",
        field="/fraud_score",
        strategy="nullify",
        value=None,
        purpose="claims-review",
    )


def test_cancelled_audit_that_never_ran_is_refunded_one_that_ran_is_not(world: World) -> None:
    from enclave.jobs import claim

    body = _claims_body(world)
    ids = []
    for _ in range(5):  # the shipped policy allows 5 per analyst, specimen and field per day
        accepted = world.client.post(f"{API}/audits", headers=world.auth("cleo"), json=body)
        assert accepted.status_code == 202, accepted.text
        ids.append(accepted.json()["audit_id"])
    refused = world.client.post(f"{API}/audits", headers=world.auth("cleo"), json=body)
    assert refused.status_code == 429
    cancelled = world.client.post(f"{API}/audits/{ids[0]}/cancel", headers=world.auth("cleo"))
    assert cancelled.status_code == 200
    again = world.client.post(f"{API}/audits", headers=world.auth("cleo"), json=body)
    assert again.status_code == 202, again.text
    ids.append(again.json()["audit_id"])
    # an audit whose work was claimed by a worker keeps its charge when cancelled
    with Runtime.open(world.home, env={}) as runtime:
        while True:
            job = claim(runtime.ledger.engine, worker_id="w", now=utc_now(), lease_seconds=60)
            assert job is not None
            if job.audit_id == ids[1]:
                break
    ran = world.client.post(f"{API}/audits/{ids[1]}/cancel", headers=world.auth("cleo"))
    assert ran.status_code == 200
    still = world.client.post(f"{API}/audits", headers=world.auth("cleo"), json=body)
    assert still.status_code == 429
    refunds = world.entries("audit.refunded", world.specimens["claims"])
    assert [r["audit_id"] for r in refunds] == [ids[0]]


# -- 3. tenant and clearance walls ----------------------------------------------------------


def test_ledger_views_are_the_operators(world: World) -> None:
    for who in ("alice", "val", "otto", "ada"):
        for path in ("/ledger/head", "/ledger/verify"):
            response = world.client.get(API + path, headers=world.auth(who))
            assert response.status_code == 403, (who, path)
    head = world.client.get(f"{API}/ledger/head", headers=world.auth("opal"))
    assert head.status_code == 200 and head.json()["hash"].startswith("sha256:")
    assert world.client.get(f"{API}/ledger/verify", headers=world.auth("opal")).json()["ok"]


def test_an_uncleared_viewer_reads_nothing_derived_from_a_restricted_specimen(
    world: World,
) -> None:
    audit = request_audit(world, "bud", seed=21)
    audit_id = audit["audit_id"]
    specimen = world.client.get(
        f"{API}/specimens/{world.specimens['procurement']}", headers=world.auth("val")
    )
    assert specimen.status_code == 403
    for path in (
        f"/audits/{audit_id}",
        f"/certificates/{audit_id}",
        f"/certificates/{audit_id}/summary",
        f"/certificates/{audit_id}/verify",
    ):
        response = world.client.get(API + path, headers=world.auth("val"))
        assert response.status_code == 403, path
        assert error_code(response) == "restricted_needs_clearance"
    listed = world.client.get(f"{API}/audits?limit=500", headers=world.auth("val")).json()["items"]
    assert audit_id not in {a["audit_id"] for a in listed}
    # a cleared colleague still sees it
    cleared = world.client.get(f"{API}/audits/{audit_id}", headers=world.auth("vera"))
    assert cleared.status_code == 200


def test_another_tenant_sees_nothing(world: World) -> None:
    audit = request_audit(world, "bud", seed=22)
    for path in (f"/audits/{audit['audit_id']}", f"/certificates/{audit['audit_id']}/summary"):
        response = world.client.get(API + path, headers=world.auth("otto"))
        assert response.status_code == 403 and error_code(response) == "tenant_isolation"


# -- 4. strict input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"seed": "1"},
        {"samples": "4"},
        {"seed": 1.0},
        {"samples": True},
        {"specimen_id": 7},
        {"purpose": 5},
        {"policy_id": 3},
        {"tolerances": {"score": True}},
        {"tolerances": {"score": False}},
        {"delta": True, "strategy": "perturb", "value": None},
    ],
)
def test_no_coercion(world: World, changes: dict[str, Any]) -> None:
    before = len(world.entries("audit.admitted"))
    body = audit_body(world.specimens["procurement"], **changes)
    if "specimen_id" in changes:
        body["specimen_id"] = changes["specimen_id"]
    response = world.client.post(f"{API}/audits", headers=world.auth("alice"), json=body)
    # the intervention part is checked by the intervention model (400 bad_input), the
    # rest by the body model (422)
    assert response.status_code == (400 if "delta" in changes else 422), response.text
    assert len(world.entries("audit.admitted")) == before


@pytest.mark.parametrize(
    "purpose",
    ["\u200b", "\x00", "review\x00", "   ", "\u2060\u200b", "a\u202eb", "line\nbreak", "\t"],
)
def test_a_purpose_is_visible_text(world: World, purpose: str) -> None:
    before = len(world.entries("audit.admitted"))
    response = world.client.post(
        f"{API}/audits",
        headers=world.auth("alice"),
        json=audit_body(world.specimens["procurement"], purpose=purpose),
    )
    assert response.status_code in (400, 422), response.text
    assert error_code(response) in ("invalid_purpose", "invalid_request")
    assert len(world.entries("audit.admitted")) == before


@pytest.mark.parametrize(
    ("delta", "code"),
    # zero is refused by the intervention model itself; a subnormal shift at admission
    [(5e-324, "no_effect"), (-2.2e-308, "no_effect"), (0.0, "bad_input")],
)
def test_a_delta_that_changes_nothing_is_refused_before_it_is_charged(
    world: World, delta: float, code: str
) -> None:
    before = len(world.entries("audit.admitted"))
    response = world.client.post(
        f"{API}/audits",
        headers=world.auth("alice"),
        json=audit_body(
            world.specimens["procurement"], strategy="perturb", value=None, delta=delta
        ),
    )
    assert response.status_code == 400, response.text
    assert error_code(response) == code
    assert len(world.entries("audit.admitted")) == before


def test_a_real_delta_is_admitted(world: World) -> None:
    accepted = request_audit(world, "lex", strategy="perturb", value=None, delta=-0.05)
    assert accepted["status"] == "QUEUED"


@pytest.mark.parametrize("path", ["/audits/", "/specimens/", "/whoami/"])
def test_no_redirect_reflects_the_host_header(world: World, path: str) -> None:
    response = world.client.get(
        API + path,
        headers={**world.auth("alice"), "Host": "evil.example"},
        follow_redirects=False,
    )
    assert not 300 <= response.status_code < 400, response.headers
    assert "evil.example" not in response.text
    assert all("evil.example" not in v for v in response.headers.values())


# -- 5. operator ergonomics -------------------------------------------------------------------


def test_rotate_and_revoke_take_effect_at_once_and_are_recorded(world: World) -> None:
    from tests.support.cli_runner import run_cli

    old = world.tokens["rota"]
    assert world.client.get(f"{API}/whoami", headers={"Authorization": f"Bearer {old}"}).is_success
    rotated = run_cli(world.home.root, "analyst", "rotate", "rota", "--json")
    assert rotated.returncode == 0, rotated.stderr
    new = json.loads(rotated.stdout)["token"]
    assert new != old
    stale = world.client.get(f"{API}/whoami", headers={"Authorization": f"Bearer {old}"})
    assert stale.status_code == 401
    fresh = world.client.get(f"{API}/whoami", headers={"Authorization": f"Bearer {new}"})
    assert fresh.status_code == 200 and fresh.json()["name"] == "rota"
    revoked = run_cli(world.home.root, "analyst", "revoke", "rota")
    assert revoked.returncode == 0, revoked.stderr
    gone = world.client.get(f"{API}/whoami", headers={"Authorization": f"Bearer {new}"})
    assert gone.status_code == 401
    again = run_cli(world.home.root, "analyst", "rotate", "rota")
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "rea_" not in again.stderr
    unknown = run_cli(world.home.root, "analyst", "revoke", "nobody")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert [e["name"] for e in world.entries("analyst.rotated")] == ["rota"]
    assert [e["name"] for e in world.entries("analyst.revoked")] == ["rota"]
    for body in world.entries("analyst.rotated") + world.entries("analyst.revoked"):
        assert "rea_" not in json.dumps(body)


@pytest.mark.vault
def test_vault_dev_keeps_its_secrets_off_the_command_line_and_in_private_files(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from enclave.cli import vault_app
    from enclave.vaultops import read_dev_state
    from tests.fixtures.openbao import require_bao
    from tests.unit.keys.test_vault_setup import parse_exports

    require_bao()
    home, env_file = tmp_path / "home", tmp_path / "vault.env"
    runner = CliRunner()
    started = runner.invoke(
        vault_app, ["dev", "--home", str(home), "--tenant", "acme", "--env-file", str(env_file)]
    )
    state = read_dev_state(home)
    try:
        assert started.exit_code == 0, started.output
        assert state is not None
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        exports = parse_exports(env_file.read_text())
        secrets = [v for k, v in exports.items() if "_SECRET_ID" in k]
        assert secrets and not any(s in started.output for s in secrets)
        assert "export " not in started.output
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes()
        assert state.root_token.encode() not in cmdline
        again = runner.invoke(vault_app, ["dev", "--home", str(home), "--env-file", str(env_file)])
        assert again.exit_code == 1
    finally:
        runner.invoke(vault_app, ["dev", "--home", str(home), "--stop"])


def test_the_embedded_ledger_is_private(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env={}) as runtime:
        add_analyst(runtime, "a", tenant="acme", roles=["viewer"], now=utc_now())
    created = [p for p in home.root.iterdir() if p.name.startswith("ledger.db")]
    assert created
    for path in created:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    home.ledger_path.chmod(0o644)  # a home from before: tightened when next opened
    Runtime.open(home, env={}).close()
    assert stat.S_IMODE(home.ledger_path.stat().st_mode) == 0o600


@pytest.mark.postgres
def test_a_postgresql_home_never_falls_back_to_an_empty_embedded_ledger(
    tmp_path: Path, postgres_url: str
) -> None:
    from tests.support.cli_runner import run_cli

    # a URL with a password: the home records where, never the secret, and needs the URL
    with_password = postgres_url.replace("@", ":CANARY-PW@", 1)
    home = Home.init(tmp_path / "home")
    with_pg = {**os.environ, "REPLAY_ENCLAVE_LEDGER_URL": with_password, "COLUMNS": "250"}
    without = {k: v for k, v in with_pg.items() if k != "REPLAY_ENCLAVE_LEDGER_URL"}
    first = run_cli(
        home.root, "analyst", "add", "ana", "--tenant", "acme", "--role", "viewer", env=with_pg
    )
    assert first.returncode == 0, first.stderr
    config = (home.root / "config.toml").read_text()
    assert "[backend]" in config and "CANARY-PW" not in config
    for args in (("specimens", "list", "--json"), ("analyst", "list", "--json")):
        refused = run_cli(home.root, *args, env=without)
        assert refused.returncode != 0 and refused.stdout == "", refused.stdout
        assert refused.stderr.count("\n") == 1 and "REPLAY_ENCLAVE_LEDGER_URL" in refused.stderr
        assert "Traceback" not in refused.stderr and "CANARY-PW" not in refused.stderr
    assert not (home.root / "ledger.db").exists()
    other = {**with_pg, "REPLAY_ENCLAVE_LEDGER_URL": f"sqlite:///{tmp_path / 'other.db'}"}
    mismatch = run_cli(home.root, "analyst", "list", "--json", env=other)
    assert mismatch.returncode != 0 and mismatch.stderr.count("\n") == 1
    assert not (tmp_path / "other.db").exists()
    listed = run_cli(home.root, "analyst", "list", "--json", env=with_pg)
    assert [a["name"] for a in json.loads(listed.stdout)] == ["ana"]
    # the fast listing path refuses without loading the database layer
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from enclave._home import Home\n"
            "from enclave._errors import BadInput\n"
            f"home = Home.open(pathlib.Path({str(home.root)!r}))\n"
            "try:\n    home.ledger_url({})\nexcept BadInput:\n    print('refused')\n"
            "print('sqlalchemy' in sys.modules)\n",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.split() == ["refused", "False"]
    # a URL without a secret is kept: the home works without the variable, on PostgreSQL
    plain = Home.init(tmp_path / "plain")
    env = {**with_pg, "REPLAY_ENCLAVE_LEDGER_URL": postgres_url}
    assert run_cli(plain.root, "analyst", "list", "--json", env=env).returncode == 0
    again = run_cli(plain.root, "analyst", "list", "--json", env=without)
    assert again.returncode == 0 and [a["name"] for a in json.loads(again.stdout)] == ["ana"]
    assert not (plain.root / "ledger.db").exists()


@pytest.mark.postgres
def test_a_postgresql_home_through_the_unix_socket(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """A server on the same host is usually reached through its socket directory
    (libpq's ``host=/path``): the home binds to that directory and port, and a
    different directory with the same port is another server."""
    from tests.support.cli_runner import run_cli

    name = "t_" + uuid.uuid4().hex[:16]
    postgres_server.admin(f'CREATE DATABASE "{name}"')
    url = postgres_server.socket_url(name)
    home = Home.init(tmp_path / "home")
    with_url = {**os.environ, "REPLAY_ENCLAVE_LEDGER_URL": url}
    added = run_cli(
        home.root, "analyst", "add", "ana", "--tenant", "acme", "--role", "viewer", env=with_url
    )
    assert added.returncode == 0, added.stderr
    config = (home.root / "config.toml").read_text()
    assert f"{postgres_server.socket_dir}:{postgres_server.port}/{name}" in config
    without = {k: v for k, v in with_url.items() if k != "REPLAY_ENCLAVE_LEDGER_URL"}
    listed = run_cli(home.root, "analyst", "list", "--json", env=without)
    assert listed.returncode == 0 and [a["name"] for a in json.loads(listed.stdout)] == ["ana"]
    assert not (home.root / "ledger.db").exists()
    elsewhere = url.replace(str(postgres_server.socket_dir), str(tmp_path / "other-sock"))
    refused = run_cli(
        home.root,
        "analyst",
        "list",
        "--json",
        env={**with_url, "REPLAY_ENCLAVE_LEDGER_URL": elsewhere},
    )
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1


def test_an_embedded_home_refuses_a_foreign_ledger_url(tmp_path: Path) -> None:
    from tests.support.cli_runner import run_cli

    home = Home.init(tmp_path / "home")
    assert run_cli(home.root, "analyst", "list", "--json").returncode == 0
    elsewhere = {
        **os.environ,
        "REPLAY_ENCLAVE_LEDGER_URL": "postgresql+psycopg://u:CANARY-PW@127.0.0.1:9/x",
    }
    refused = run_cli(home.root, "specimens", "list", "--json", env=elsewhere)
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1
    assert "CANARY-PW" not in refused.stderr + refused.stdout
    # the embedded ledger is the home's own file wherever the home is: a copy is whole
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(home.root, copy)
    assert run_cli(copy, "analyst", "list", "--json").returncode == 0


def _self_signed(directory: Path) -> tuple[Path, Path]:
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    keyfile.chmod(0o600)
    return certfile, keyfile


def test_serve_with_workers_tls_and_a_body_limit(tmp_path: Path) -> None:
    import ssl

    import httpx

    home = Home.init(tmp_path / "home")
    token = _add_analysts(home, {"alice": ("acme", ["auditor"])})["alice"]
    certfile, keyfile = _self_signed(tmp_path)
    port = free_port()
    argv = [sys.executable, "-c", _MAIN, "serve", "--home", str(home.root), "--port", str(port)]
    argv += ["--workers", "2", "--ssl-certfile", str(certfile), "--ssl-keyfile", str(keyfile)]
    argv += ["--max-body-bytes", "2048"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = ssl.create_default_context(cafile=str(certfile))
    auth = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=f"https://localhost:{port}/api/v1", verify=context) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    answer = client.get("/whoami", headers=auth, timeout=5)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, "the server exited"
                    assert time.monotonic() < deadline, "the server did not start"
                    time.sleep(0.3)
            assert answer.status_code == 200 and answer.json()["name"] == "alice"
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text()
            assert len(children.split()) >= 2  # the worker processes
            big = client.post(
                "/audits",
                content=b"{" + b" " * 4096 + b"}",
                headers={**auth, "Content-Type": "application/json"},
                timeout=5,
            )
            assert big.status_code == 413
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_refuses_half_a_tls_configuration(tmp_path: Path) -> None:
    from tests.support.cli_runner import run_cli

    home = Home.init(tmp_path / "home")
    certfile, _ = _self_signed(tmp_path)
    refused = run_cli(home.root, "serve", "--ssl-certfile", str(certfile), timeout=60)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1


@pytest.mark.vault
def test_a_key_server_outage_is_named_as_such(tmp_path: Path, openbao: Any) -> None:
    from enclave.cli import capture_incidents
    from enclave.jobs import audit_status, run_worker, submit_audit
    from enclave.keys import admin_client
    from enclave.replay import AuditRequest, Intervention, Strategy
    from enclave.vaultops import apply_setup
    from tests.fixtures.openbao import vault_env

    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme"])
    env = vault_env(setup.export_lines())
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env=env) as runtime:
        specimen = capture_incidents(runtime)["procurement"]
        request = AuditRequest(
            specimen_id=specimen,
            intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
            purpose="purchase-order-review",
            requester="analyst-1",
            samples=2,
            seed=1,
        )
        status = submit_audit(runtime, request, tenant_id="acme", now=utc_now(), max_attempts=2)
    down = {**env, "VAULT_ADDR": f"http://127.0.0.1:{free_port()}"}
    deadline = time.monotonic() + 60
    while True:
        run_worker(
            lambda: Runtime.open(home, env=down),
            worker_id="w",
            stop=threading.Event(),
            once=True,
        )
        with Runtime.open(home, env=down) as runtime:
            now = audit_status(runtime, status.audit_id)
        if now.terminal:
            break
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert now.status == "FAILED" and now.failure_code == "key_server_unavailable"
    # a command meeting the outage says so on one line of stderr
    from tests.support.cli_runner import run_cli

    fresh = Home.init(tmp_path / "fresh")
    failed = run_cli(fresh.root, "demo", env={**os.environ, **down})
    assert failed.returncode == 3
    assert failed.stderr.count("\n") == 1 and "key server unavailable" in failed.stderr


def test_a_new_homes_config_is_private(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    assert stat.S_IMODE((home.root / "config.toml").stat().st_mode) == 0o600


@pytest.mark.vault
def test_vault_setup_writes_secret_ids_to_a_private_file(tmp_path: Path, openbao: Any) -> None:
    from typer.testing import CliRunner

    from enclave.cli import vault_app
    from tests.unit.keys.test_vault_setup import parse_exports

    env_file = tmp_path / "setup.env"
    done = CliRunner().invoke(
        vault_app,
        [
            "setup",
            "--addr",
            openbao.addr,
            "--token",
            openbao.root_token,
            "--env-file",
            str(env_file),
        ],
    )
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    secrets = [v for k, v in parse_exports(env_file.read_text()).items() if "_SECRET_ID" in k]
    assert secrets and not any(s in done.output for s in secrets)
