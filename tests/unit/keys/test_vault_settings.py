"""VaultSettings parsing (no server) and AppRole re-login (real OpenBao)."""

from __future__ import annotations

import pytest

from enclave import Refused
from enclave.keys import VaultSession, VaultSettings, admin_client
from enclave.vaultops import SetupResult
from tests.fixtures.openbao import OpenBaoServer

BASE = {"VAULT_ADDR": "http://127.0.0.1:8200"}


def test_approle_for_a_role_wins_over_a_token() -> None:
    env = {
        **BASE,
        "VAULT_TOKEN": "root-ish",
        "REPLAY_ENCLAVE_VAULT_ROLE_ID_BROKER": "rid",
        "REPLAY_ENCLAVE_VAULT_SECRET_ID_BROKER": "sid-secret",
    }
    broker = VaultSettings.from_env_or_config(env, role="broker")
    assert broker.auth_method == "approle" and broker.token is None
    assert (broker.role_id, broker.secret_id) == ("rid", "sid-secret")
    assert "sid-secret" not in repr(broker)
    # another role has no AppRole variables: falls back to the token
    capture = VaultSettings.from_env_or_config(env, role="capture")
    assert capture.auth_method == "token" and "root-ish" not in repr(capture)


def test_environment_overrides_config_and_config_fills_gaps() -> None:
    config = {
        "vault": {
            "addr": "https://vault.internal:8200",
            "mount": "kms",
            "key_prefix": "acme-",
            "role_id_capture": "cfg-rid",
            "secret_id_capture": "cfg-sid",
            "ca_cert": "/etc/ssl/vault.pem",
        }
    }
    from_config = VaultSettings.from_env_or_config({}, config, role="capture")
    assert from_config.addr == "https://vault.internal:8200"
    assert (from_config.mount, from_config.key_prefix) == ("kms", "acme-")
    assert from_config.verify == "/etc/ssl/vault.pem"
    assert from_config.role_id == "cfg-rid"
    env = {**BASE, "VAULT_SKIP_VERIFY": "true", "REPLAY_ENCLAVE_VAULT_MOUNT": "transit"}
    mixed = VaultSettings.from_env_or_config(env, config["vault"], role="capture")
    assert mixed.addr == BASE["VAULT_ADDR"] and mixed.mount == "transit"
    assert mixed.verify is False and mixed.key_prefix == "acme-"


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({}, None),  # no address
        ({**BASE}, None),  # no credentials
        ({"VAULT_ADDR": "ftp://x", "VAULT_TOKEN": "t"}, None),
        ({**BASE, "REPLAY_ENCLAVE_VAULT_ROLE_ID": "only-role-id"}, None),
        ({**BASE, "VAULT_TOKEN": "t", "REPLAY_ENCLAVE_VAULT_MOUNT": "a/../b c"}, None),
        ({**BASE, "VAULT_TOKEN": "t"}, {"vault": {"mount": ["list"]}}),
    ],
)
def test_incomplete_or_malformed_settings_are_refused(
    env: dict[str, str], config: dict[str, object] | None
) -> None:
    with pytest.raises(ValueError):
        VaultSettings.from_env_or_config(env, config)


@pytest.mark.vault
def test_session_logs_in_again_when_the_token_ages(
    openbao: OpenBaoServer, vault_setup: SetupResult
) -> None:
    clock = [0.0]
    cred = vault_setup.credentials_for("capture")
    settings = VaultSettings(addr=openbao.addr, role_id=cred.role_id, secret_id=cred.secret_id)
    session = VaultSession(settings, monotonic=lambda: clock[0])
    first = session.client()
    assert session.client() is first
    clock[0] += 0.81 * 15 * 60  # past 80 % of the role's 15 min token TTL
    second = session.client()
    assert second is not first and second.token != first.token
    root = admin_client(openbao.addr, openbao.root_token)
    info = root.adapter.post("/v1/auth/token/lookup", json={"token": second.token})["data"]
    assert info["policies"] == ["replay-enclave-capture"]


@pytest.mark.vault
def test_wrong_secret_id_is_a_refusal(openbao: OpenBaoServer, vault_setup: SetupResult) -> None:
    cred = vault_setup.credentials_for("broker")
    settings = VaultSettings(addr=openbao.addr, role_id=cred.role_id, secret_id="wrong-secret")
    with pytest.raises(Refused) as info:
        VaultSession(settings).client()
    assert "wrong-secret" not in str(info.value)
