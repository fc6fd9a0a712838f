"""KEK rotation, rewrap and trim (crypto-shredding by key version) against a real OpenBao."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import hvac.exceptions
import pytest

from enclave import GrantRefused, Refused
from enclave.keys import (
    TransitKeyProvider,
    VaultSession,
    VaultSettings,
    admin_client,
    derivation_context,
)
from enclave.vaultops import SetupResult, ensure_tenant_key
from tests.fixtures.openbao import OpenBaoServer

pytestmark = pytest.mark.vault


def provider(openbao: OpenBaoServer, setup: SetupResult, role: Any) -> TransitKeyProvider:
    cred = setup.credentials_for(role)
    return TransitKeyProvider(
        settings=VaultSettings(addr=openbao.addr, role_id=cred.role_id, secret_id=cred.secret_id)
    )


def redeem(broker: TransitKeyProvider, tenant: str, specimen: str, wrapped: Any) -> bytes:
    t = datetime.now(UTC)
    return broker.issue_grant(tenant, specimen, wrapped, job_id="j", ttl_seconds=30, now=t).redeem(
        now=datetime.now(UTC)
    )


@pytest.fixture
def tenant(openbao: OpenBaoServer) -> str:
    name = "r-" + uuid.uuid4().hex[:10]
    ensure_tenant_key(admin_client(openbao.addr, openbao.root_token), name)
    return name


def test_rotate_rewrap_trim(openbao: OpenBaoServer, vault_setup: SetupResult, tenant: str) -> None:
    capture = provider(openbao, vault_setup, "capture")
    broker = provider(openbao, vault_setup, "broker")
    custodian = provider(openbao, vault_setup, "rotate")
    root = admin_client(openbao.addr, openbao.root_token)

    key1, wrapped1 = capture.new_data_key(tenant, "old")
    keep1, keep_wrapped1 = capture.new_data_key(tenant, "kept")
    assert wrapped1.kek_version == 1

    # rotate: new data keys use v2, v1-wrapped keys still grant
    assert custodian.rotate(tenant) == 2
    key2, wrapped2 = capture.new_data_key(tenant, "new")
    assert wrapped2.kek_version == 2 and wrapped2.blob.startswith("vault:v2:")
    assert redeem(broker, tenant, "old", wrapped1) == key1

    # rewrap: same data key, now under v2; the context still binds it to its specimen
    rewrapped = custodian.rewrap(tenant, "kept", keep_wrapped1)
    assert rewrapped.kek_version == 2 and rewrapped.blob != keep_wrapped1.blob
    assert redeem(broker, tenant, "kept", rewrapped) == keep1
    with pytest.raises(Refused):  # rewrap under another specimen's context fails in transit
        custodian.rewrap(tenant, "old", keep_wrapped1)

    # trim: every v1-wrapped key of the tenant becomes unrecoverable, even for root
    custodian.trim_versions(tenant, keep_from=2)
    with pytest.raises(GrantRefused):
        redeem(broker, tenant, "old", wrapped1)
    with pytest.raises(Refused):
        custodian.rewrap(tenant, "old", wrapped1)
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.adapter.post(
            f"/v1/transit/decrypt/{wrapped1.kek_id}",
            json={"ciphertext": wrapped1.blob, "context": derivation_context(tenant, "old")},
        )
    info = root.adapter.get(f"/v1/transit/keys/{wrapped1.kek_id}")["data"]
    assert sorted(info["keys"]) == ["2"] and info["min_available_version"] == 2
    # ...while v2-wrapped keys (new and rewrapped) still grant
    assert redeem(broker, tenant, "new", wrapped2) == key2
    assert redeem(broker, tenant, "kept", rewrapped) == keep1


def test_custodian_cannot_loosen_export_or_decrypt(
    openbao: OpenBaoServer, vault_setup: SetupResult, tenant: str
) -> None:
    cred = vault_setup.credentials_for("rotate")
    client = VaultSession(
        VaultSettings(addr=openbao.addr, role_id=cred.role_id, secret_id=cred.secret_id)
    ).client()
    name = f"replay-enclave-{tenant}"
    for path, body in [
        (f"/v1/transit/keys/{name}/config", {"exportable": True}),
        (f"/v1/transit/keys/{name}/config", {"allow_plaintext_backup": True}),
        (f"/v1/transit/keys/{name}/config", {"deletion_allowed": True}),
        (f"/v1/transit/keys/{name}", {"derived": True}),  # create/overwrite
        (f"/v1/transit/decrypt/{name}", {"ciphertext": "vault:v1:AAAA", "context": "AA=="}),
        (f"/v1/transit/datakey/plaintext/{name}", {"context": "AA=="}),
        ("/v1/sys/policies/acl/x", {"policy": ""}),
    ]:
        with pytest.raises(hvac.exceptions.Forbidden):
            client.adapter.post(path, json=body)
    for path in (f"/v1/transit/export/encryption-key/{name}", f"/v1/transit/backup/{name}"):
        with pytest.raises(hvac.exceptions.Forbidden):
            client.adapter.get(path)


def test_tenant_key_cannot_be_exported_or_backed_up_even_by_root(
    openbao: OpenBaoServer, tenant: str
) -> None:
    root = admin_client(openbao.addr, openbao.root_token)
    name = f"replay-enclave-{tenant}"
    info = root.adapter.get(f"/v1/transit/keys/{name}")["data"]
    assert info["derived"] is True and info["exportable"] is False
    assert info["allow_plaintext_backup"] is False and info["type"] == "aes256-gcm96"
    for path in (
        f"/v1/transit/export/encryption-key/{name}",
        f"/v1/transit/export/encryption-key/{name}/1",
        f"/v1/transit/backup/{name}",
    ):
        # refused because of the key's own settings (400 for export, 500 for backup)
        with pytest.raises(hvac.exceptions.VaultError) as info:
            root.adapter.get(path)
        assert not isinstance(info.value, hvac.exceptions.Forbidden)
        assert "export" in str(info.value).lower()
