"""Transit key provider and grants against a real OpenBao (invariant 7: narrow, short grants)."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import hvac.exceptions
import pytest

from enclave import GrantRefused, InfrastructureError, Refused
from enclave.keys import (
    Grant,
    KeyProvider,
    TransitGrant,
    TransitKeyProvider,
    VaultSession,
    VaultSettings,
    WrappedKey,
    admin_client,
    derivation_context,
)
from enclave.vaultops import DevServer, SetupResult, apply_setup, ensure_tenant_key, stop_server
from tests.fixtures.openbao import OpenBaoServer

pytestmark = pytest.mark.vault


def settings_for(addr: str, setup: SetupResult, role: Any) -> VaultSettings:
    cred = setup.credentials_for(role)
    return VaultSettings(addr=addr, role_id=cred.role_id, secret_id=cred.secret_id)


def provider(openbao: OpenBaoServer, setup: SetupResult, role: Any) -> TransitKeyProvider:
    return TransitKeyProvider(settings=settings_for(openbao.addr, setup, role))


def raw_client(openbao: OpenBaoServer, setup: SetupResult, role: Any) -> Any:
    return VaultSession(settings_for(openbao.addr, setup, role)).client()


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def tenant(openbao: OpenBaoServer) -> str:
    name = "t-" + uuid.uuid4().hex[:10]
    ensure_tenant_key(admin_client(openbao.addr, openbao.root_token), name)
    return name


@pytest.fixture
def capture(openbao: OpenBaoServer, vault_setup: SetupResult) -> TransitKeyProvider:
    return provider(openbao, vault_setup, "capture")


@pytest.fixture
def broker(openbao: OpenBaoServer, vault_setup: SetupResult) -> TransitKeyProvider:
    return provider(openbao, vault_setup, "broker")


def test_provider_and_grant_satisfy_the_protocols(
    capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    assert isinstance(capture, KeyProvider)
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="job-1", ttl_seconds=30, now=now())
    assert isinstance(grant, Grant)
    grant.revoke()


def test_capture_then_grant_returns_the_same_data_key(
    capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    key, wrapped = capture.new_data_key(tenant, "spec-1")
    assert len(key) == 32
    assert wrapped.provider == "transit"
    assert wrapped.kek_id == f"replay-enclave-{tenant}"
    assert wrapped.kek_version == 1 and wrapped.blob.startswith("vault:v1:")
    record: dict[str, object] = dict(wrapped.to_dict())
    assert WrappedKey.from_dict(record) == wrapped
    issued = now()
    grant = broker.issue_grant(
        tenant, "spec-1", wrapped, job_id="job-9", ttl_seconds=60, now=issued
    )
    assert (grant.specimen_id, grant.job_id) == ("spec-1", "job-9")
    assert grant.expires_at == issued + timedelta(seconds=60)
    assert grant.redeem(now=now()) == key


def test_grant_never_exposes_its_token(
    capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(grant, TransitGrant)
    token = grant._token
    assert token and token not in repr(grant) and token != grant.accessor
    assert not hasattr(grant, "token") and not hasattr(grant, "__dict__")
    with pytest.raises(TypeError):
        pickle.dumps(grant)
    grant.revoke()


def test_capture_identity_cannot_decrypt_read_or_export(
    openbao: OpenBaoServer, vault_setup: SetupResult, capture: TransitKeyProvider, tenant: str
) -> None:
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    client = raw_client(openbao, vault_setup, "capture")
    key = wrapped.kek_id
    body = {"ciphertext": wrapped.blob, "context": derivation_context(tenant, "spec-1")}
    for method, path, payload in [
        ("post", f"/v1/transit/decrypt/{key}", body),
        ("post", f"/v1/transit/rewrap/{key}", body),
        ("get", f"/v1/transit/keys/{key}", None),
        ("get", f"/v1/transit/export/encryption-key/{key}", None),
        ("get", f"/v1/transit/backup/{key}", None),
        ("post", "/v1/transit/keys/replay-enclave-new", {"derived": True}),
        ("post", "/v1/transit/datakey/wrapped/" + key, {"context": body["context"]}),
        ("get", "/v1/sys/policies/acl", None),
    ]:
        with pytest.raises(hvac.exceptions.Forbidden):
            getattr(client.adapter, method)(path, json=payload)
    with pytest.raises(GrantRefused):  # through the provider: the same refusal, opaque
        capture.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())


def test_grant_for_specimen_a_cannot_reach_specimen_b(
    openbao: OpenBaoServer,
    vault_setup: SetupResult,
    capture: TransitKeyProvider,
    broker: TransitKeyProvider,
    tenant: str,
) -> None:
    key_a, wrapped_a = capture.new_data_key(tenant, "spec-a")
    key_b, wrapped_b = capture.new_data_key(tenant, "spec-b")
    assert key_a != key_b
    # crypto: B's wrapped key presented with A's derivation context fails inside transit,
    # even for root, so no grant can be issued for it under A's name
    root = admin_client(openbao.addr, openbao.root_token)
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.adapter.post(
            f"/v1/transit/decrypt/{wrapped_b.kek_id}",
            json={"ciphertext": wrapped_b.blob, "context": derivation_context(tenant, "spec-a")},
        )
    with pytest.raises(GrantRefused):
        broker.issue_grant(tenant, "spec-a", wrapped_b, job_id="j", ttl_seconds=30, now=now())
    # ACL: A's grant token is not a credential for anything but its own unwrap
    grant = broker.issue_grant(tenant, "spec-a", wrapped_a, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(grant, TransitGrant)
    as_grant = VaultSession(VaultSettings(addr=openbao.addr, token=grant._token)).client()
    with pytest.raises(hvac.exceptions.Forbidden):
        as_grant.adapter.post(
            f"/v1/transit/decrypt/{wrapped_b.kek_id}",
            json={"ciphertext": wrapped_b.blob, "context": derivation_context(tenant, "spec-b")},
        )
    # the denied attempt spent the token's single use: the stolen grant is now dead
    with pytest.raises(GrantRefused):
        grant.redeem(now=now())
    fresh = broker.issue_grant(tenant, "spec-a", wrapped_a, job_id="j", ttl_seconds=30, now=now())
    assert fresh.redeem(now=now()) == key_a
    # a wrapped key from another tenant is refused before any request
    other = "t-" + uuid.uuid4().hex[:10]
    ensure_tenant_key(root, other)
    with pytest.raises(GrantRefused):
        broker.issue_grant(other, "spec-a", wrapped_a, job_id="j", ttl_seconds=30, now=now())


def test_second_redeem_is_refused(
    capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    key, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert grant.redeem(now=now()) == key
    with pytest.raises(GrantRefused) as info:
        grant.redeem(now=now())
    assert str(info.value) == "key grant refused"


def test_token_reused_through_a_copy_is_refused_by_the_server(
    openbao: OpenBaoServer, capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    """Single use is the server's property, not only our object's state."""
    key, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(grant, TransitGrant)
    twin = TransitGrant(
        _adapter=grant._adapter,
        _token=grant._token,
        accessor=grant.accessor,
        specimen_id=grant.specimen_id,
        job_id=grant.job_id,
        expires_at=grant.expires_at,
        expected_path=grant._expected_path,
    )
    assert grant.redeem(now=now()) == key
    with pytest.raises(GrantRefused):
        twin.redeem(now=now())


def test_substituted_wrapping_token_is_refused_without_being_unwrapped(
    openbao: OpenBaoServer, capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    """A token that looks right but was minted elsewhere (sys/wrapping/wrap with a chosen
    "plaintext") must not be accepted as a data key: the lookup checks creation_path."""
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    real = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(real, TransitGrant)
    root = admin_client(openbao.addr, openbao.root_token)
    chosen = base64.b64encode(b"k" * 32).decode()
    forged = root.adapter.post("/v1/sys/wrapping/wrap", json={"plaintext": chosen}, wrap_ttl="30s")[
        "wrap_info"
    ]
    fake = TransitGrant(
        _adapter=real._adapter,
        _token=forged["token"],
        accessor=forged["accessor"],
        specimen_id="spec-1",
        job_id="j",
        expires_at=real.expires_at,
        expected_path=real._expected_path,
    )
    with pytest.raises(GrantRefused):
        fake.redeem(now=now())
    # refused before the unwrap: the forged token is still unused on the server
    lookup = root.adapter.post("/v1/sys/wrapping/lookup", json={"token": forged["token"]})
    assert lookup["data"]["creation_path"] == "sys/wrapping/wrap"
    real.revoke()


def test_expired_wrapping_token_is_refused(
    capture: TransitKeyProvider,
    broker: TransitKeyProvider,
    tenant: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    issued = now()
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=1, now=issued)
    time.sleep(1.6)
    # our clock still says "valid" — the server's expiry must refuse on its own
    with pytest.raises(GrantRefused):
        grant.redeem(now=issued)
    # and a grant past its expiry is refused locally, without asking the server
    late = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j2", ttl_seconds=1, now=issued)
    with caplog.at_level(logging.WARNING, logger="enclave.keys.transit"):
        with pytest.raises(GrantRefused):
            late.redeem(now=late.expires_at)
    diagnostics = [getattr(r, "grant_diagnostic", None) for r in caplog.records]
    assert "grant expired" in diagnostics
    assert all(wrapped.blob not in r.getMessage() for r in caplog.records)


def test_revoked_grant_is_refused_and_dead_on_the_server(
    openbao: OpenBaoServer, capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(grant, TransitGrant)
    token = grant._token
    grant.revoke()
    grant.revoke()  # idempotent
    with pytest.raises(GrantRefused):
        grant.redeem(now=now())
    anonymous = VaultSession(VaultSettings(addr=openbao.addr, token="unused")).client()
    anonymous.token = ""
    with pytest.raises(hvac.exceptions.InvalidRequest):
        anonymous.adapter.post("/v1/sys/wrapping/lookup", json={"token": token})
    # revoking after a redeem is a no-op, not an error
    used = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j2", ttl_seconds=30, now=now())
    used.redeem(now=now())
    used.revoke()


def test_broker_cannot_decrypt_unwrapped_batch_or_too_long(
    openbao: OpenBaoServer,
    vault_setup: SetupResult,
    capture: TransitKeyProvider,
    broker: TransitKeyProvider,
    tenant: str,
) -> None:
    _, wrapped = capture.new_data_key(tenant, "spec-1")
    client = raw_client(openbao, vault_setup, "broker")
    path = f"/v1/transit/decrypt/{wrapped.kek_id}"
    context = derivation_context(tenant, "spec-1")
    body = {"ciphertext": wrapped.blob, "context": context}
    refused: list[tuple[dict[str, Any], str | None]] = [
        (body, None),  # unwrapped
        (body, "16m"),  # longer than max_wrapping_ttl
        ({"batch_input": [body]}, "30s"),
        ({**body, "batch_input": [body]}, "30s"),
        ({**body, "nonce": "AAAA"}, "30s"),
        ({"ciphertext": wrapped.blob}, "30s"),  # context is required
    ]
    for payload, wrap_ttl in refused:
        with pytest.raises(hvac.exceptions.Forbidden):
            client.adapter.post(path, json=payload, wrap_ttl=wrap_ttl)
    for path_ in ("/v1/sys/policies/acl/x", "/v1/auth/token/create", f"/v1/transit/keys/{tenant}"):
        with pytest.raises(hvac.exceptions.Forbidden):
            client.adapter.post(path_, json={"policy": 'path "*" {}'})
    with pytest.raises(Refused):
        broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=901, now=now())
    with pytest.raises(ValueError):
        broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=0, now=now())


def _forms(secret: bytes) -> list[str]:
    """Text encodings a leak could take: raw, hex, base64 (std/url) at all alignments."""
    forms = [secret.hex(), secret.hex().upper()]
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(secret[shift:]).decode().rstrip("=")
            forms.append(core[: len(core) - 4])  # the last quantum depends on the tail
    try:
        forms.append(secret.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    return [f for f in forms if len(f) >= 16]


def test_audit_log_records_each_grant_hmaced_and_never_the_key(
    openbao: OpenBaoServer, capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    root = admin_client(openbao.addr, openbao.root_token)
    context = derivation_context(tenant, "spec-canary")
    canary = b"CANARY-7f3e-data-key-32-bytes!!!"
    assert len(canary) == 32
    # a wrapped key whose plaintext we chose, sent through the full grant path
    blob = root.adapter.post(
        f"/v1/transit/encrypt/replay-enclave-{tenant}",
        json={"plaintext": base64.b64encode(canary).decode(), "context": context},
    )["data"]["ciphertext"]
    canary_wrapped = WrappedKey(
        provider="transit", kek_id=f"replay-enclave-{tenant}", kek_version=1, blob=blob
    )
    key, wrapped = capture.new_data_key(tenant, "spec-1")
    grants = [
        broker.issue_grant(tenant, "spec-1", wrapped, job_id="ja", ttl_seconds=30, now=now()),
        broker.issue_grant(
            tenant, "spec-canary", canary_wrapped, job_id="jb", ttl_seconds=30, now=now()
        ),
    ]
    assert grants[0].redeem(now=now()) == key
    assert grants[1].redeem(now=now()) == canary

    text = openbao.audit_log.read_text(encoding="utf-8")
    entries = [json.loads(line) for line in text.splitlines()]

    def audit_hash(value: str) -> str:
        return str(
            root.adapter.post("/v1/sys/audit-hash/file", json={"input": value})["data"]["hash"]
        )

    for grant, secret in zip(grants, (key, canary), strict=True):
        hashed = audit_hash(grant.accessor)
        assert grant.accessor not in text
        issued = [
            e
            for e in entries
            if e["type"] == "response"
            and e["request"]["path"] == f"transit/decrypt/replay-enclave-{tenant}"
            and (e["response"].get("wrap_info") or {}).get("accessor") == hashed
        ]
        unwrapped = [
            e
            for e in entries
            if e["type"] == "response"
            and e["request"]["path"] == "sys/wrapping/unwrap"
            and e["request"].get("client_token_accessor") == hashed
        ]
        assert len(issued) == 1 and len(unwrapped) == 1
        logged = unwrapped[0]["response"]["data"]["plaintext"]
        assert logged == audit_hash(base64.b64encode(secret).decode())
        for form in _forms(secret):
            assert form not in text
    assert "CANARY" not in text.upper()


def test_unreachable_server_is_an_infrastructure_error(
    spare_openbao: DevServer, caplog: pytest.LogCaptureFixture
) -> None:
    setup = apply_setup(admin_client(spare_openbao.addr, spare_openbao.root_token), tenants=["t1"])
    capture = TransitKeyProvider(settings=settings_for(spare_openbao.addr, setup, "capture"))
    broker = TransitKeyProvider(settings=settings_for(spare_openbao.addr, setup, "broker"))
    _, wrapped = capture.new_data_key("t1", "spec-1")
    grant = broker.issue_grant("t1", "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    assert isinstance(grant, TransitGrant)
    secrets_ = [
        spare_openbao.root_token,
        grant._token,
        wrapped.blob,
        *(c.secret_id or "" for c in setup.credentials),
    ]
    stop_server(spare_openbao)
    errors: list[BaseException] = []
    with caplog.at_level(logging.DEBUG):
        for call in (
            lambda: capture.new_data_key("t1", "spec-2"),
            lambda: broker.issue_grant(
                "t1", "spec-1", wrapped, job_id="k", ttl_seconds=30, now=now()
            ),
            lambda: grant.redeem(now=now()),
            lambda: TransitKeyProvider(
                settings=settings_for(spare_openbao.addr, setup, "broker")
            ).rotate("t1"),
        ):
            with pytest.raises(InfrastructureError) as info:
                call()
            errors.append(info.value)
    for error in errors:
        assert "unavailable" in str(error)
        assert error.__cause__ is None and error.__suppress_context__
    shown = " ".join(str(e) for e in errors) + " ".join(r.getMessage() for r in caplog.records)
    shown += " ".join(str(r.__dict__) for r in caplog.records)
    for secret in secrets_:
        assert secret and secret not in shown


def test_a_handed_over_grant_is_dead_here_and_redeems_once_where_it_was_sent(
    openbao: OpenBaoServer, capture: TransitKeyProvider, broker: TransitKeyProvider, tenant: str
) -> None:
    """The service mints and hands the token over; the worker redeems it with no
    credential of its own, after looking up its creation path."""
    from enclave.keys import anonymous_adapter

    key, wrapped = capture.new_data_key(tenant, "spec-1")
    grant = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    token = grant.hand_over()
    assert token
    with pytest.raises(GrantRefused):
        grant.redeem(now=now())  # the minting side can no longer redeem it

    def received(path: str) -> TransitGrant:
        return TransitGrant.received(
            adapter=anonymous_adapter(openbao.addr),
            token=token,
            accessor=grant.accessor,
            specimen_id="spec-1",
            job_id="j",
            expires_at=now() + timedelta(seconds=30),
            expected_path=path,
        )

    with pytest.raises(GrantRefused):  # another tenant's path: refused before any unwrap
        received("transit/decrypt/replay-enclave-someone-else").redeem(now=now())
    assert received(f"transit/decrypt/replay-enclave-{tenant}").redeem(now=now()) == key
    with pytest.raises(GrantRefused):
        received(f"transit/decrypt/replay-enclave-{tenant}").redeem(now=now())
    grant.revoke()  # after use: nothing left to revoke, no error
    # the minting side may still revoke a handed-over grant nobody used (a cancel)
    unused = broker.issue_grant(tenant, "spec-1", wrapped, job_id="j", ttl_seconds=30, now=now())
    token = unused.hand_over()
    unused.revoke()
    with pytest.raises(GrantRefused):
        received(f"transit/decrypt/replay-enclave-{tenant}").redeem(now=now())
