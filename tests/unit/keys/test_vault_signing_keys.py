"""The log and issuer keys in Vault/OpenBao transit, against a real OpenBao.

A Vault-mode home signs its checkpoints and its certificates inside transit with
non-exportable Ed25519 keys (``<prefix>_log``, ``<prefix>_issuer``, made by ``vault
setup``): no file of either in the home, only their public halves pinned there on first
use. Only the governance plane (the broker identity) may sign with them; the capture and
rotate identities can neither use them, turn them into data keys, nor rotate them. A key
changed in transit after the pin signs nothing."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import hvac.exceptions
import pytest

from enclave import Home, IntegrityFailure, Refused, Runtime
from enclave.keys import VaultSession, VaultSettings, admin_client
from enclave.vaultops import apply_setup
from ledger.certificates import load_public_key_pem
from ledger.certificates.tlog import NoteVerifier, open_note, parse_checkpoint
from tests.fixtures.openbao import OpenBaoServer, transit_log_verifier, vault_env
from tests.support.cli_runner import run_cli

pytestmark = pytest.mark.vault

LOG_KEY = "replay-enclave-_log"
SIGNING_KEYS = ["replay-enclave-_log", "replay-enclave-_issuer"]


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


@pytest.mark.parametrize("key_name", SIGNING_KEYS)
def test_only_the_governance_plane_can_use_a_signing_key(
    openbao: OpenBaoServer, key_name: str
) -> None:
    setup = apply_setup(admin_client(openbao.addr, openbao.root_token), tenants=["acme"])
    env = vault_env(setup.export_lines())
    message = {"input": "aGVsbG8="}
    capture, rotate = identity(openbao, env, "capture"), identity(openbao, env, "rotate")
    broker = identity(openbao, env, "broker")
    assert broker.adapter.post(f"/v1/transit/sign/{key_name}", json=message)["data"]["signature"]
    for client, path, body in [
        (capture, f"transit/sign/{key_name}", message),
        (capture, f"transit/datakey/plaintext/{key_name}", {"context": "YQ=="}),
        (rotate, f"transit/sign/{key_name}", message),
        (rotate, f"transit/keys/{key_name}/rotate", {}),
        (rotate, f"transit/keys/{key_name}/config", {"min_decryption_version": 1}),
        (rotate, f"transit/keys/{key_name}/trim", {"min_available_version": 1}),
        (rotate, f"transit/rewrap/{key_name}", {"ciphertext": "vault:v1:AA==", "context": "YQ=="}),
        (broker, f"transit/keys/{key_name}/rotate", {}),
        (broker, f"transit/export/signing-key/{key_name}", {}),
        (broker, f"transit/sign/{key_name}", {**message, "key_version": 1}),
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


@pytest.mark.parametrize("key_name", SIGNING_KEYS)
def test_setup_refuses_a_signing_key_that_could_leave_transit(spare_openbao, key_name: str) -> None:
    admin = admin_client(spare_openbao.addr, spare_openbao.root_token)
    mount = "m-" + uuid.uuid4().hex[:8]
    admin.sys.enable_secrets_engine("transit", path=mount)
    admin.adapter.post(f"/v1/{mount}/keys/{key_name}", json={"type": "ed25519", "exportable": True})
    with pytest.raises(Refused) as info:
        apply_setup(admin, mount=mount)
    assert info.value.code == "vault_key_unsafe"
    other = "m-" + uuid.uuid4().hex[:8]
    admin.sys.enable_secrets_engine("transit", path=other)
    admin.adapter.post(f"/v1/{other}/keys/{key_name}", json={"type": "aes256-gcm96"})
    with pytest.raises(Refused):
        apply_setup(admin, mount=other)


def test_an_issuer_key_changed_in_transit_signs_nothing(tmp_path: Path, spare_openbao) -> None:
    from enclave.replay.certificates import signing_key

    setup = apply_setup(admin_client(spare_openbao.addr, spare_openbao.root_token))
    env = vault_env(setup.export_lines())
    with Runtime.open(Home.init(tmp_path / "home"), env=env) as runtime:
        key = signing_key(runtime)
        signature = key.sign(b"statement")
        pin = tmp_path / "home" / "keys" / "issuer-key-transit.pub"
        assert load_public_key_pem(pin.read_bytes()) is not None
        assert not (tmp_path / "home" / "keys" / "signing-key.pem").exists()
        admin = admin_client(spare_openbao.addr, spare_openbao.root_token)
        admin.adapter.post("/v1/transit/keys/replay-enclave-_issuer/rotate", json={})
        with pytest.raises(IntegrityFailure, match="pinned"):
            signing_key(runtime).sign(b"statement")
    # what it signed before the rotation verifies with the pin
    load_public_key_pem(pin.read_bytes()).verify(signature, b"statement")
