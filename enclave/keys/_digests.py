"""Keyed field digests: HMAC-SHA256 with a per-tenant secret held on the enclave side.

Digests leave the enclave (ledger, certificates). An unkeyed hash of a low-entropy value
(a score, a yes/no) would be a leak: anyone could hash the few candidates and compare.
"""

from __future__ import annotations

import base64
import json
import secrets
from hashlib import sha256
from pathlib import Path

from .._errors import InfrastructureError
from ._files import write_private
from ._local import keys_lock

__all__ = ["DigestKeys", "TenantDigester"]

_BLOCK = 64  # SHA-256 block size in bytes


class TenantDigester:
    """Computes ``hmac-sha256:<hex>`` digests for one tenant."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise ValueError("digest secret must be at least 32 bytes")
        # HMAC (RFC 2104) with the keyed inner and outer SHA-256 states computed once;
        # each digest copies them (tests check equality with ``hmac.new``)
        if len(secret) > _BLOCK:
            secret = sha256(secret).digest()
        padded = secret.ljust(_BLOCK, b"\0")
        self._inner = sha256(bytes(b ^ 0x36 for b in padded))
        self._outer = sha256(bytes(b ^ 0x5C for b in padded))

    def digest(self, data: bytes) -> str:
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return "hmac-sha256:" + outer.hexdigest()


class DigestKeys:
    """Per-tenant digest secrets in ``<home>/keys/digest-keys.json`` (0600)."""

    def __init__(self, *, keys_dir: Path) -> None:
        self._path = keys_dir / "digest-keys.json"

    def _load(self) -> dict[str, str]:
        try:
            data: dict[str, str] = json.loads(self._path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise InfrastructureError("digest keyring is unreadable") from exc
        return data

    def for_tenant(self, tenant_id: str) -> TenantDigester:
        data = self._load()
        if tenant_id not in data:
            # under the lock and re-read: two processes must not mint two secrets
            with keys_lock(self._path.parent, "digest-keys"):
                data = self._load()
                if tenant_id not in data:
                    data[tenant_id] = base64.b64encode(secrets.token_bytes(32)).decode()
                    write_private(self._path, json.dumps(data, sort_keys=True).encode())
        return TenantDigester(base64.b64decode(data[tenant_id]))
