"""The log key in Vault/OpenBao transit, against a real OpenBao.

A Vault-mode home signs its checkpoints inside transit with a non-exportable Ed25519 key
(``<prefix>_log``, made by ``vault setup``): no file of it in the home, only its public
half pinned there on first use. Only the governance plane (the broker identity) may sign
with it; the capture and rotate identities can neither use it, turn it into a data key,
nor rotate it. A key changed in transit after the pin signs nothing."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import hvac.exceptions
import pytest

from enclave import Home, Refused, Runtime
from enclave.keys import VaultSession, VaultSettings, admin_client
from enclave.vaultops import apply_setup
from ledger.certificates.tlog import NoteVerifier, open_note, parse_checkpoint
from tests.fixtures.openbao import OpenBaoServer, transit_log_verifier, vault_env
from tests.support.cli_runner import run_cli

pytestmark = pytest.mark.vault

LOG_KEY = "replay-enclave-_log"


def vault_home(home: Path, server) -> dict[str, str]:
    """A Vault-mode home holding one entry; the environment its commands run in."""
    setup = apply_setup(admin_client(server.addr, server.root_token), tenants=["acme"])
    env = vault_env(setup.export_lines())
    with Runtime.open(Home.init(home), env=env) as runtime:
        runtime.ledger.append("test.entry", "subject-1", {"n": 1})
    return env | {"REPLAY_ENCLAVE_HOME": str(home)}


def command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(Path(env["REPLAY_ENCLAVE_HOME"]), *args, env={**os.environ, **env})


def checkpoint(env: dict[str, str]) -> tuple[int, str]:
    """``ledger checkpoint``: its exit code, and its note (else its error)."""
    done = command(env, "ledger", "checkpoint")
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr


def signed_checkpoints(home: Path) -> int:
    import sqlalchemy as sa

    with Runtime.open(Home.open(home), env={}) as runtime, runtime.ledger.engine.connect() as c:
        return c.execute(sa.text("SELECT count(*) FROM ledger_signed_checkpoints")).scalar_one()


def identity(server, setup_env: dict[str, str], role: str):
    settings = VaultSettings.from_env_or_config(setup_env, role=role)  # type: ignore[arg-type]
    return VaultSession(settings).client()


def test_checkpoints_are_signed_in_transit_by_a_key_that_stays_there(
    tmp_path: Path, openbao: OpenBaoServer
) -> None:
    env = vault_home(tmp_path / "home", openbao)
    code, note = checkpoint(env)
    assert code == 0, note
    origin = note.splitlines()[0]
    verifier = NoteVerifier.parse(transit_log_verifier(openbao, origin))
    signed = parse_checkpoint(open_note(note, [verifier])[0])
    assert signed.size == 1
    # no private half anywhere in the home; the public half is pinned
    keys = tmp_path / "home" / "keys"
    assert not (keys / "log-key.pem").exists()
    assert [p.name for p in keys.glob("log-key*")] == ["log-key-transit.pub"]
    # the key cannot leave transit, and transit recorded the signature
    data = admin_client(openbao.addr, openbao.root_token).adapter.get(f"/v1/transit/keys/{LOG_KEY}")
    settings = data["data"]
    assert settings["type"] == "ed25519"
    assert settings["exportable"] is False and settings["allow_plaintext_backup"] is False
    assert f"transit/sign/{LOG_KEY}".encode() in Path(openbao.audit_log).read_bytes()
    # the command line prints the same verifier key
    printed = command(env, "ledger", "checkpoint", "--public-key")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == verifier.encode()


def test_only_the_governance_plane_can_use_the_log_key(openbao: OpenBaoServer) -> None:
    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme"])
    env = vault_env(setup.export_lines())
    message = {"input": "aGVsbG8="}
    capture, rotate = identity(openbao, env, "capture"), identity(openbao, env, "rotate")
    broker = identity(openbao, env, "broker")
    assert broker.adapter.post(f"/v1/transit/sign/{LOG_KEY}", json=message)["data"]["signature"]
    for client, path, body in [
        (capture, f"transit/sign/{LOG_KEY}", message),
        (capture, f"transit/datakey/plaintext/{LOG_KEY}", {"context": "YQ=="}),
        (rotate, f"transit/sign/{LOG_KEY}", message),
        (rotate, f"transit/keys/{LOG_KEY}/rotate", {}),
        (rotate, f"transit/keys/{LOG_KEY}/config", {"min_decryption_version": 1}),
        (rotate, f"transit/keys/{LOG_KEY}/trim", {"min_available_version": 1}),
        (rotate, f"transit/rewrap/{LOG_KEY}", {"ciphertext": "vault:v1:AA==", "context": "YQ=="}),
        (broker, f"transit/keys/{LOG_KEY}/rotate", {}),
        (broker, f"transit/export/signing-key/{LOG_KEY}", {}),
        (broker, f"transit/sign/{LOG_KEY}", {**message, "key_version": 1}),
    ]:
        with pytest.raises(hvac.exceptions.Forbidden):
            client.adapter.post(f"/v1/{path}", json=body)
    # the same rotate identity still rotates a tenant's key: the refusals above are the
    # log key's own, not a broken identity
    assert rotate.adapter.post("/v1/transit/keys/replay-enclave-acme/rotate", json={}) is not None


def test_a_log_key_changed_in_transit_signs_nothing(tmp_path: Path, spare_openbao) -> None:
    home = tmp_path / "home"
    env = vault_home(home, spare_openbao)
    assert checkpoint(env)[0] == 0 and signed_checkpoints(home) == 1
    with Runtime.open(Home.open(home), env={}) as runtime:
        runtime.ledger.append("test.entry", "subject-2", {"n": 2})
    admin = admin_client(spare_openbao.addr, spare_openbao.root_token)
    admin.adapter.post(f"/v1/transit/keys/{LOG_KEY}/rotate", json={})
    code, output = checkpoint(env)
    assert code != 0 and "pinned" in output and len(output.strip().splitlines()) == 1
    assert signed_checkpoints(home) == 1


def test_setup_refuses_a_log_key_that_could_leave_transit(spare_openbao) -> None:
    admin = admin_client(spare_openbao.addr, spare_openbao.root_token)
    admin.sys.enable_secrets_engine("transit", path="transit")
    admin.adapter.post(f"/v1/transit/keys/{LOG_KEY}", json={"type": "ed25519", "exportable": True})
    with pytest.raises(Refused) as info:
        apply_setup(admin)
    assert info.value.code == "vault_key_unsafe"
    other = "m-" + uuid.uuid4().hex[:8]
    admin.sys.enable_secrets_engine("transit", path=other)
    admin.adapter.post(f"/v1/{other}/keys/replay-enclave-_log", json={"type": "aes256-gcm96"})
    with pytest.raises(Refused):
        apply_setup(admin, mount=other)
