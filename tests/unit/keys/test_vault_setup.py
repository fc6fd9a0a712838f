"""Provisioning (``vault setup``) and the dev server (``vault dev``) against real OpenBao."""

from __future__ import annotations

import os
import shlex
import stat
import uuid
from datetime import UTC, datetime
from pathlib import Path

import hvac.exceptions
import pytest
from typer.testing import CliRunner

from enclave import Refused
from enclave.cli import vault_app
from enclave.keys import TransitKeyProvider, VaultSession, VaultSettings, admin_client
from enclave.vaultops import (
    apply_setup,
    ensure_tenant_key,
    load_roles,
    load_tenant_template,
    read_dev_state,
    render_policy,
    render_tenant_policy,
)
from tests.fixtures.openbao import OpenBaoServer, require_bao

runner = CliRunner()


def parse_exports(output: str) -> dict[str, str]:
    env = {}
    for line in output.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            env[name] = shlex.split(value)[0]
    return env


def test_policy_files_render_for_another_mount_and_prefix() -> None:
    roles = {r.role: r for r in load_roles(mount="kms/transit", key_prefix="acme-")}
    assert set(roles) == {"capture", "broker", "rotate"}
    assert "decrypt" not in roles["broker"].policy_hcl.split("# Nothing else")[0]
    template = load_tenant_template()
    broker = render_tenant_policy(template, tenant="t1", mount="kms/transit", key_prefix="acme-")
    assert 'path "kms/transit/decrypt/acme-t1"' in broker and "transit/decrypt/replay" not in broker
    assert "*" not in broker and "+" not in broker.split("allowed_parameters")[0]
    assert "batch_input" not in broker.split("allowed_parameters")[1]
    assert 'path "kms/transit/datakey/plaintext/acme-*"' in roles["capture"].policy_hcl
    # the signing keys are named after the prefix in every file that names them, default
    # in none
    for key in ("_log", "_issuer"):
        assert f'path "kms/transit/sign/acme-{key}"' in roles["broker"].policy_hcl
        assert f'path "kms/transit/datakey/plaintext/acme-{key}"' in roles["capture"].policy_hcl
        assert f'path "kms/transit/keys/acme-{key}/rotate"' in roles["rotate"].policy_hcl
    paths = [
        line
        for r in roles.values()
        for line in r.policy_hcl.splitlines()
        if line.startswith("path")
    ]
    assert paths and not any("replay-enclave-" in line for line in paths)
    for role in roles.values():
        assert role.settings["token_no_default_policy"] is True
        assert role.settings["token_policies"] == [role.policy_name]
        assert role.settings["secret_id_num_uses"] > 0
    with pytest.raises(ValueError):
        render_policy("", mount="a b", key_prefix="x-")


@pytest.mark.vault
def test_setup_is_idempotent_and_prints_working_credentials(openbao: OpenBaoServer) -> None:
    tenant = "s-" + uuid.uuid4().hex[:8]
    args = ["setup", "--addr", openbao.addr, "--tenant", tenant]
    first = runner.invoke(vault_app, args, env={"VAULT_TOKEN": openbao.root_token})
    second = runner.invoke(vault_app, args, env={"VAULT_TOKEN": openbao.root_token})
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    env = parse_exports(second.output)
    assert env["VAULT_ADDR"] == openbao.addr
    for role in ("CAPTURE", "BROKER", "ROTATE"):
        assert env[f"REPLAY_ENCLAVE_VAULT_ROLE_ID_{role}"]
        assert env[f"REPLAY_ENCLAVE_VAULT_SECRET_ID_{role}"]
    assert openbao.root_token not in first.output + second.output
    capture = TransitKeyProvider(settings=VaultSettings.from_env_or_config(env, role="capture"))
    broker = TransitKeyProvider(settings=VaultSettings.from_env_or_config(env, role="broker"))
    key, wrapped = capture.new_data_key(tenant, "spec-1")
    t = datetime.now(UTC)
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=10, now=t)
    assert grant.redeem(now=datetime.now(UTC)) == key


@pytest.mark.vault
def test_setup_refuses_without_admin_rights_and_unsafe_keys(openbao: OpenBaoServer) -> None:
    root = admin_client(openbao.addr, openbao.root_token)
    result = apply_setup(root)
    broker_cred = result.credentials_for("broker")
    broker = VaultSession(
        VaultSettings(
            addr=openbao.addr, role_id=broker_cred.role_id, secret_id=broker_cred.secret_id
        )
    ).client()
    with pytest.raises(Refused):  # the broker cannot provision anything
        apply_setup(broker)
    bad = runner.invoke(vault_app, ["setup", "--addr", openbao.addr, "--token", "not-a-token"])
    assert bad.exit_code == 1 and "refused" in bad.output and "not-a-token" not in bad.output
    # an existing key that could leave transit is refused, not silently accepted
    tenant = "u-" + uuid.uuid4().hex[:8]
    root.adapter.post(
        f"/v1/transit/keys/replay-enclave-{tenant}",
        json={"type": "aes256-gcm96", "derived": True, "exportable": True},
    )
    with pytest.raises(Refused) as info:
        ensure_tenant_key(root, tenant)
    assert info.value.code == "vault_key_unsafe"
    # a mount path used by another engine is refused
    root.sys.enable_secrets_engine("kv", path="kv-" + tenant)
    with pytest.raises(Refused):
        apply_setup(root, mount="kv-" + tenant)


@pytest.mark.vault
def test_broker_and_capture_tokens_have_no_default_policy(openbao: OpenBaoServer) -> None:
    result = apply_setup(admin_client(openbao.addr, openbao.root_token))
    for role in ("capture", "broker"):
        cred = result.credentials_for(role)
        client = VaultSession(
            VaultSettings(addr=openbao.addr, role_id=cred.role_id, secret_id=cred.secret_id)
        ).client()
        # default policy would allow these; the roles drop it
        for path in ("/v1/cubbyhole/x", "/v1/auth/token/create"):
            with pytest.raises(hvac.exceptions.Forbidden):
                client.adapter.post(path, json={"a": "b"})


@pytest.mark.vault
def test_dev_command_starts_sets_up_and_stops(tmp_path: Path) -> None:
    require_bao()
    home = tmp_path / "home"
    started = runner.invoke(vault_app, ["dev", "--home", str(home), "--tenant", "acme"])
    try:
        assert started.exit_code == 0, started.output
        state_path = home / "vault-dev.json"
        assert stat.S_IMODE(state_path.stat().st_mode) == 0o600
        state = read_dev_state(home)
        assert state is not None and state.root_token not in started.output
        assert (home / "vault-dev.hcl").read_text().count('audit "file"') == 1
        env = parse_exports(started.output)
        capture = TransitKeyProvider(settings=VaultSettings.from_env_or_config(env, role="capture"))
        _, wrapped = capture.new_data_key("acme", "spec-1")
        assert wrapped.kek_version == 1
        assert state.audit_log.stat().st_size > 0
        again = runner.invoke(vault_app, ["dev", "--home", str(home)])
        assert again.exit_code == 1 and "already" in again.output
    finally:
        stopped = runner.invoke(vault_app, ["dev", "--home", str(home), "--stop"])
    assert stopped.exit_code == 0 and "stopped" in stopped.output
    assert not (home / "vault-dev.json").exists()
    assert not os.path.exists(f"/proc/{state.pid}")  # stopped and reaped
    gone = runner.invoke(vault_app, ["dev", "--home", str(home), "--stop"])
    assert gone.exit_code == 0 and "no dev server" in gone.output
