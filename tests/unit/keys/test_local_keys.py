"""The embedded key provider: single-use, expiring, revocable, single-specimen grants;
private files; rotation, rewrap and trim; and a keyring that survives concurrent
processes."""

from __future__ import annotations

import multiprocessing
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave import GrantRefused, InfrastructureError
from enclave.keys import (
    DigestKeys,
    Grant,
    KeyProvider,
    LocalGrant,
    LocalKeyProvider,
    TenantDigester,
    WrappedKey,
)

NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "keys"


@pytest.fixture
def provider(keys_dir: Path) -> LocalKeyProvider:
    return LocalKeyProvider(keys_dir=keys_dir)


def grant_for(
    provider: LocalKeyProvider,
    specimen: str,
    wrapped: WrappedKey,
    *,
    tenant: str = "acme",
    ttl: int = 60,
) -> LocalGrant:
    return provider.issue_grant(tenant, specimen, wrapped, job_id="job-1", ttl_seconds=ttl, now=NOW)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_provider_and_grant_meet_the_protocols(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    assert isinstance(provider, KeyProvider)
    assert isinstance(grant_for(provider, "sp-a", wrapped), Grant)


def test_redeem_once_then_refused(provider: LocalKeyProvider) -> None:
    key, wrapped = provider.new_data_key("acme", "sp-a")
    assert len(key) == 32
    grant = grant_for(provider, "sp-a", wrapped)
    assert grant.redeem(now=NOW) == key
    with pytest.raises(GrantRefused, match="^key grant refused$"):
        grant.redeem(now=NOW)


def test_expired_grant_is_refused(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    grant = grant_for(provider, "sp-a", wrapped, ttl=30)
    assert grant.expires_at == NOW + timedelta(seconds=30)
    with pytest.raises(GrantRefused):
        grant.redeem(now=NOW + timedelta(seconds=30))
    late = grant_for(provider, "sp-a", wrapped, ttl=30)
    with pytest.raises(GrantRefused):
        late.redeem(now=NOW + timedelta(days=1))
    fresh = grant_for(provider, "sp-a", wrapped, ttl=30)
    assert fresh.redeem(now=NOW + timedelta(seconds=29))


def test_revoked_grant_is_refused(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    grant = grant_for(provider, "sp-a", wrapped)
    grant.revoke()
    grant.revoke()  # idempotent
    with pytest.raises(GrantRefused):
        grant.redeem(now=NOW)


def test_grant_for_one_specimen_cannot_unwrap_another(provider: LocalKeyProvider) -> None:
    _, wrapped_a = provider.new_data_key("acme", "sp-a")
    key_b, wrapped_b = provider.new_data_key("acme", "sp-b")
    with pytest.raises(GrantRefused):
        grant_for(provider, "sp-a", wrapped_b).redeem(now=NOW)
    # nor can a tenant's grant unwrap another tenant's key
    _, wrapped_g = provider.new_data_key("globex", "sp-b")
    with pytest.raises(GrantRefused):
        grant_for(provider, "sp-b", wrapped_g, tenant="acme").redeem(now=NOW)
    with pytest.raises(GrantRefused):
        grant_for(provider, "sp-b", wrapped_b, tenant="globex").redeem(now=NOW)
    assert grant_for(provider, "sp-b", wrapped_b).redeem(now=NOW) == key_b


def test_forged_token_is_refused(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    real = grant_for(provider, "sp-a", wrapped)
    forged = LocalGrant(
        _provider=provider,
        _token="not-the-token",
        accessor=real.accessor,
        specimen_id=real.specimen_id,
        job_id=real.job_id,
        expires_at=real.expires_at,
        tenant_id=real.tenant_id,
    )
    with pytest.raises(GrantRefused):
        forged.redeem(now=NOW)


def test_naive_clock_or_damaged_grant_file_is_refused(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    grant = grant_for(provider, "sp-a", wrapped)
    with pytest.raises(GrantRefused):
        grant.redeem(now=NOW.replace(tzinfo=None))
    damaged = grant_for(provider, "sp-a", wrapped)
    provider._grant_path(damaged.accessor).write_text('{"token_sha256": 1}')
    with pytest.raises(GrantRefused):
        damaged.redeem(now=NOW)


def test_grant_does_not_show_its_token(provider: LocalKeyProvider) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    grant = grant_for(provider, "sp-a", wrapped)
    assert grant._token not in repr(grant)
    grant_file = provider._grant_path(grant.accessor).read_text()
    assert grant._token not in grant_file


def test_files_are_private(provider: LocalKeyProvider, keys_dir: Path) -> None:
    _, wrapped = provider.new_data_key("acme", "sp-a")
    grant = grant_for(provider, "sp-a", wrapped)
    DigestKeys(keys_dir=keys_dir).for_tenant("acme")
    assert mode(keys_dir) == 0o700
    assert mode(keys_dir / "grants") == 0o700
    assert mode(keys_dir / "keyring.json") == 0o600
    assert mode(keys_dir / "digest-keys.json") == 0o600
    grant_files = list((keys_dir / "grants").iterdir())
    assert [p.name for p in grant_files] == [f"{grant.accessor}.json"]
    assert mode(grant_files[0]) == 0o600
    provider.rotate("acme")
    assert mode(keys_dir / "keyring.json") == 0o600
    assert not [p for p in keys_dir.iterdir() if p.name.endswith(".tmp")]


def test_rotate_and_rewrap_keep_old_specimens_decryptable(provider: LocalKeyProvider) -> None:
    key, wrapped_v1 = provider.new_data_key("acme", "sp-a")
    assert wrapped_v1.kek_version == 1
    assert provider.rotate("acme") == 2
    assert grant_for(provider, "sp-a", wrapped_v1).redeem(now=NOW) == key
    wrapped_v2 = provider.rewrap("acme", "sp-a", wrapped_v1)
    assert wrapped_v2.kek_version == 2 and wrapped_v2.blob != wrapped_v1.blob
    assert grant_for(provider, "sp-a", wrapped_v2).redeem(now=NOW) == key
    _, new = provider.new_data_key("acme", "sp-b")
    assert new.kek_version == 2


def test_trim_destroys_keys_wrapped_with_old_versions(provider: LocalKeyProvider) -> None:
    old_key, old = provider.new_data_key("acme", "sp-old")
    kept_key, kept = provider.new_data_key("acme", "sp-kept")
    provider.rotate("acme")
    kept = provider.rewrap("acme", "sp-kept", kept)
    with pytest.raises(ValueError):
        provider.trim_versions("acme", keep_from=3)
    provider.trim_versions("acme", keep_from=2)
    with pytest.raises(GrantRefused):
        grant_for(provider, "sp-old", old).redeem(now=NOW)
    assert grant_for(provider, "sp-kept", kept).redeem(now=NOW) == kept_key
    assert old_key not in (provider._keyring_path.read_bytes())


def test_digests_are_keyed_per_tenant_and_stable(keys_dir: Path) -> None:
    digests = DigestKeys(keys_dir=keys_dir)
    a1 = digests.for_tenant("acme").digest(b"0.82")
    assert a1 == DigestKeys(keys_dir=keys_dir).for_tenant("acme").digest(b"0.82")
    assert a1 != digests.for_tenant("globex").digest(b"0.82")
    assert a1.startswith("hmac-sha256:") and len(a1) == len("hmac-sha256:") + 64
    import hashlib

    assert hashlib.sha256(b"0.82").hexdigest() not in a1


# -- across processes ----------------------------------------------------------------

_CTX = multiprocessing.get_context("spawn")
WORKERS = 4


def _redeem_worker(grant: LocalGrant, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        results.put(("ok", grant.redeem(now=NOW)))
    except GrantRefused:
        results.put(("refused", b""))


def _new_key_worker(keys_dir: Path, tenant: str, index: int, barrier: Any, results: Any) -> None:
    provider = LocalKeyProvider(keys_dir=keys_dir)
    barrier.wait()
    key, wrapped = provider.new_data_key(tenant, f"sp-{index}")
    digest = DigestKeys(keys_dir=keys_dir).for_tenant(tenant).digest(b"same value")
    results.put((index, key, wrapped.to_dict(), digest))


def _run(target: Any, args: list[tuple[Any, ...]]) -> list[Any]:
    processes = [_CTX.Process(target=target, args=a) for a in args]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    results = args[0][-1]
    return [results.get(timeout=5) for _ in processes]


def test_racing_redeems_across_processes_succeed_exactly_once(provider: LocalKeyProvider) -> None:
    key, wrapped = provider.new_data_key("acme", "sp-a")
    for _round in range(2):
        grant = grant_for(provider, "sp-a", wrapped)
        barrier, results = _CTX.Barrier(WORKERS), _CTX.Queue()
        outcomes = _run(_redeem_worker, [(grant, barrier, results)] * WORKERS)
        assert sorted(o for o, _ in outcomes) == ["ok"] + ["refused"] * (WORKERS - 1)
        assert [k for o, k in outcomes if o == "ok"] == [key]


def test_concurrent_first_use_of_a_tenant_loses_no_key(keys_dir: Path) -> None:
    """Processes that create a tenant's first KEK and digest secret at the same moment
    must agree on them: every wrapped key still unwraps, every digest is the same."""
    for attempt in range(2):
        tenant = f"tenant-{attempt}"
        barrier, results = _CTX.Barrier(WORKERS), _CTX.Queue()
        outcomes = _run(
            _new_key_worker, [(keys_dir, tenant, i, barrier, results) for i in range(WORKERS)]
        )
        provider = LocalKeyProvider(keys_dir=keys_dir)
        for index, key, wrapped, _digest in outcomes:
            grant = grant_for(provider, f"sp-{index}", WrappedKey.from_dict(wrapped), tenant=tenant)
            assert grant.redeem(now=NOW) == key
        assert len({digest for *_, digest in outcomes}) == 1


@settings(max_examples=200, deadline=None)
@given(secret=st.binary(min_size=32, max_size=200), data=st.binary(max_size=5000))
def test_digester_is_exactly_hmac_sha256(secret: bytes, data: bytes) -> None:
    import hashlib
    import hmac

    expected = "hmac-sha256:" + hmac.new(secret, data, hashlib.sha256).hexdigest()
    assert TenantDigester(secret).digest(data) == expected


def test_short_digest_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        TenantDigester(b"x" * 31)


@pytest.mark.parametrize("which", ["keyring.json", "digest-keys.json"])
def test_an_unreadable_keyring_refers_to_no_error_holding_its_text(
    keys_dir: Path, which: str
) -> None:
    """A JSON decode error keeps the whole document as ``doc``: here, key material. The
    refusal names the file's kind only and links to no such error, not even as the
    hidden ``__context__`` that ``from None`` leaves."""
    provider = LocalKeyProvider(keys_dir=keys_dir)
    provider.new_data_key("acme", "sp-1")
    DigestKeys(keys_dir=keys_dir).for_tenant("acme")
    canary = "CANARY-keyring-5d1e"
    (keys_dir / which).write_text('{"tenants": {"acme": "' + canary)
    with pytest.raises(InfrastructureError) as info:
        if which == "keyring.json":
            LocalKeyProvider(keys_dir=keys_dir).new_data_key("acme", "sp-2")
        else:
            DigestKeys(keys_dir=keys_dir).for_tenant("acme")
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert canary not in str(info.value)
