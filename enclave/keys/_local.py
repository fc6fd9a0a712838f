"""The embedded key provider: KEKs in a keyring file (mode 0600) under the home.

Invariants (same as every provider, see ``_provider``): KEKs never leave this module;
wrapping is bound to ``tenant/specimen`` through AES-GCM associated data; grants are
single-use files — redeeming unlinks the grant file, and only one unlink can succeed,
even across processes. Every read-modify-write of the keyring (a tenant's first KEK,
``rotate``, ``trim``) holds an exclusive ``flock`` on ``<keys>/.keyring.lock`` and
re-reads the file under it, so two processes can never each mint a tenant's first KEK
and lose one (with it, every data key it wrapped).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ledger import raise_unchained

from .._errors import DecryptionFailed, GrantRefused, InfrastructureError
from ._files import write_private
from ._provider import WrappedKey

__all__ = ["LocalKeyProvider", "LocalGrant", "keys_lock"]


@contextmanager
def keys_lock(keys_dir: Path, name: str) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) shared by every process using ``keys_dir``."""
    keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(keys_dir / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise InfrastructureError("key store lock is unavailable") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _wrap_aad(tenant_id: str, specimen_id: str) -> bytes:
    return f"replay-enclave/datakey/{tenant_id}/{specimen_id}".encode()


@dataclass
class LocalGrant:
    """A single-use grant file. The secret token never leaves this object."""

    _provider: LocalKeyProvider = field(repr=False)
    _token: str = field(repr=False)
    accessor: str
    specimen_id: str
    job_id: str
    expires_at: datetime
    tenant_id: str

    def redeem(self, *, now: datetime) -> bytes:
        return self._provider._redeem(self, now=now)

    def revoke(self) -> None:
        self._provider._grant_path(self.accessor).unlink(missing_ok=True)


class LocalKeyProvider:
    """KEKs per tenant and version in ``<home>/keys/keyring.json``."""

    name = "local"

    def __init__(self, *, keys_dir: Path) -> None:
        self._dir = keys_dir
        self._keyring_path = keys_dir / "keyring.json"
        self._grants_dir = keys_dir / "grants"

    # -- keyring -----------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._keyring_path.read_text())
        except FileNotFoundError:
            return {"tenants": {}}
        except (OSError, ValueError):  # a decode error's ``doc`` holds the keys
            raise_unchained(InfrastructureError("keyring is unreadable"))
        return data

    def _save(self, data: dict[str, Any]) -> None:
        write_private(self._keyring_path, json.dumps(data, sort_keys=True).encode())

    def _tenant(self, tenant_id: str, *, create: bool) -> dict[str, Any]:
        tenant = self._load()["tenants"].get(tenant_id)
        if tenant is None:
            if not create:
                raise DecryptionFailed()
            with keys_lock(self._dir, "keyring"):
                data = self._load()  # another process may have created it meanwhile
                tenant = data["tenants"].get(tenant_id)
                if tenant is None:
                    tenant = {"current": 1, "versions": {"1": _b64(secrets.token_bytes(32))}}
                    data["tenants"][tenant_id] = tenant
                    self._save(data)
        return dict(tenant)

    def _kek(self, tenant: dict[str, Any], version: int) -> bytes:
        try:
            return base64.b64decode(tenant["versions"][str(version)])
        except KeyError:
            raise DecryptionFailed() from None

    # -- KeyProvider ---------------------------------------------------------------
    def new_data_key(self, tenant_id: str, specimen_id: str) -> tuple[bytes, WrappedKey]:
        tenant = self._tenant(tenant_id, create=True)
        version = int(tenant["current"])
        data_key = secrets.token_bytes(32)
        return data_key, self._wrap(tenant, version, tenant_id, specimen_id, data_key)

    def _wrap(
        self, tenant: dict[str, Any], version: int, tenant_id: str, specimen_id: str, key: bytes
    ) -> WrappedKey:
        nonce = secrets.token_bytes(12)
        sealed = AESGCM(self._kek(tenant, version)).encrypt(
            nonce, key, _wrap_aad(tenant_id, specimen_id)
        )
        return WrappedKey(
            provider=self.name, kek_id=tenant_id, kek_version=version, blob=_b64(nonce + sealed)
        )

    def _unwrap(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> bytes:
        if wrapped.provider != self.name or wrapped.kek_id != tenant_id:
            raise DecryptionFailed()
        tenant = self._tenant(tenant_id, create=False)
        try:
            raw = base64.b64decode(wrapped.blob, validate=True)
            return AESGCM(self._kek(tenant, wrapped.kek_version)).decrypt(
                raw[:12], raw[12:], _wrap_aad(tenant_id, specimen_id)
            )
        except (InvalidTag, ValueError):
            raise DecryptionFailed() from None

    def rotate(self, tenant_id: str) -> int:
        with keys_lock(self._dir, "keyring"):
            data = self._load()
            tenant = data["tenants"].setdefault(tenant_id, {"current": 0, "versions": {}})
            version = int(tenant["current"]) + 1
            tenant["versions"][str(version)] = _b64(secrets.token_bytes(32))
            tenant["current"] = version
            self._save(data)
        return version

    def rewrap(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> WrappedKey:
        key = self._unwrap(tenant_id, specimen_id, wrapped)
        tenant = self._tenant(tenant_id, create=False)
        return self._wrap(tenant, int(tenant["current"]), tenant_id, specimen_id, key)

    def trim_versions(self, tenant_id: str, *, keep_from: int) -> None:
        """Destroy KEK versions below ``keep_from``: keys wrapped by them are gone."""
        min_version = keep_from
        with keys_lock(self._dir, "keyring"):
            data = self._load()
            tenant = data["tenants"].get(tenant_id)
            if tenant is None:
                raise ValueError("no keys for this tenant")
            if min_version > int(tenant["current"]):
                raise ValueError("cannot trim the current key version")
            versions = tenant["versions"].items()
            tenant["versions"] = {v: k for v, k in versions if int(v) >= min_version}
            self._save(data)

    # -- grants --------------------------------------------------------------------
    def _grant_path(self, accessor: str) -> Path:
        return self._grants_dir / f"{accessor}.json"

    def issue_grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> LocalGrant:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        token, accessor = secrets.token_urlsafe(32), secrets.token_hex(12)
        expires_at = now + timedelta(seconds=ttl_seconds)
        record = {
            "tenant_id": tenant_id,
            "specimen_id": specimen_id,
            "job_id": job_id,
            "expires_at": expires_at.isoformat(),
            "token_sha256": hashlib.sha256(token.encode()).hexdigest(),
            "wrapped": wrapped.to_dict(),
        }
        self._grants_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(self._grant_path(accessor), json.dumps(record).encode())
        return LocalGrant(
            _provider=self,
            _token=token,
            accessor=accessor,
            specimen_id=specimen_id,
            job_id=job_id,
            expires_at=expires_at,
            tenant_id=tenant_id,
        )

    def _redeem(self, grant: LocalGrant, *, now: datetime) -> bytes:
        path = self._grant_path(grant.accessor)
        try:
            record = json.loads(path.read_bytes())
            path.unlink()  # the single use: only one unlink of this file can succeed
        except (OSError, ValueError):  # a decode error's ``doc`` is the grant record
            raise_unchained(GrantRefused())
        expected = hashlib.sha256(grant._token.encode()).hexdigest()
        try:
            if (
                not hmac.compare_digest(str(record.get("token_sha256", "")), expected)
                or record.get("specimen_id") != grant.specimen_id
                or record.get("job_id") != grant.job_id
                or now >= datetime.fromisoformat(record["expires_at"])
            ):
                raise GrantRefused()
            return self._unwrap(
                record["tenant_id"], record["specimen_id"], WrappedKey.from_dict(record["wrapped"])
            )
        except (DecryptionFailed, KeyError, TypeError, ValueError, AttributeError):
            # a damaged grant record, or a naive ``now`` that cannot be compared
            raise_unchained(GrantRefused())


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
