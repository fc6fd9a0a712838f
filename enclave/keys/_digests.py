"""Keyed field digests: HMAC-SHA256 with a per-tenant secret held on the enclave side.

Digests leave the enclave (ledger, certificates). An unkeyed hash of a low-entropy value
(a score, a yes/no) would be a leak: anyone could hash the few candidates and compare.

Two forms (``docs/digests.md``):

* internal — ``digest(canonical bytes)``, one key per tenant: equal values give equal
  digests across the tenant. Only enclave code compares these, in memory.
* published — ``published(internal, ...)``: the internal digest re-keyed with a key
  bound to one specimen, one place in it (call, side, pointer) and one purpose. Equal
  values in two specimens, two fields or two purposes give unrelated digests; the same
  value at the same place for the same purpose gives the same digest. Everything that
  leaves the enclave (ledger rows, API, CLI, certificates) carries this form.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from collections.abc import Sequence
from hashlib import sha256
from pathlib import Path
from typing import Protocol

from ledger import raise_unchained

from .._errors import InfrastructureError
from ._files import write_private
from ._local import keys_lock

__all__ = ["PURPOSES", "DigestKeys", "DigestSource", "TenantDigester"]

_BLOCK = 64  # SHA-256 block size in bytes
# What a published digest is for; each gets keys of its own, so a digest made for one
# purpose never equals one made for another (a requested value vs the recorded field).
PURPOSES = frozenset({"field", "step", "identity", "request", "counterfactual", "unchanged"})
# Derivation inputs start with a NUL byte: RFC 8785 text (and the recorder's "identity/"
# inputs) never do, so a derivation input is never what ``digest`` keys for a value.
_DERIVE = b"\0replay-enclave/published-digest/v1\0"


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

    def _mac(self, data: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(data)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def digest(self, data: bytes) -> str:
        """The internal digest: equal for equal bytes anywhere in the tenant."""
        return "hmac-sha256:" + self._mac(data).hex()

    def published(
        self, digest: str, *, specimen_id: str, locator: Sequence[str], purpose: str
    ) -> str:
        """The form of an internal ``digest`` that may leave the enclave.

        Key = HMAC(tenant secret, NUL label + length-prefixed [specimen, *locator, purpose]);
        the published digest is HMAC(key, internal digest). ``locator`` names the place
        in the specimen: (call id, side, JSON pointer or target label).
        """
        if purpose not in PURPOSES:
            raise ValueError("unknown digest purpose")
        if not digest.startswith("hmac-sha256:"):
            raise ValueError("only an internal keyed digest can be published")
        parts = [specimen_id, *locator, purpose]
        if not all(isinstance(p, str) for p in parts):
            raise TypeError("a digest locator is made of strings")
        # length-prefixed parts: no two part lists share an encoding
        encoded = [p.encode("utf-8", "surrogatepass") for p in parts]
        context = b"".join(len(b).to_bytes(4, "big") + b for b in encoded)
        key = self._mac(_DERIVE + context)
        return "hmac-sha256:" + hmac.digest(key, digest.encode(), "sha256").hex()


class DigestSource(Protocol):
    """Where a process gets a tenant's digester: the home's keyring (``DigestKeys``), or
    for a worker on another host the service, per claimed job
    (``enclave.keys._service_grants``)."""

    def for_tenant(self, tenant_id: str) -> TenantDigester: ...


class DigestKeys:
    """Per-tenant digest secrets in ``<home>/keys/digest-keys.json`` (0600).

    ``mint=False``: a secret that is not there is refused instead of created (a worker
    whose secrets come from the service must never key digests with one of its own)."""

    def __init__(self, *, keys_dir: Path, mint: bool = True) -> None:
        self._path = keys_dir / "digest-keys.json"
        self._mint = mint

    def _load(self) -> dict[str, str]:
        try:
            data: dict[str, str] = json.loads(self._path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):  # a decode error's ``doc`` holds the keys
            raise_unchained(InfrastructureError("digest keyring is unreadable"))
        return data

    def secret_of(self, tenant_id: str) -> bytes:
        """The tenant's secret as stored (never minted here): what the service hands a
        worker on another host for one job."""
        data = self._load()
        if tenant_id not in data:
            raise InfrastructureError("this process has no digest key for the tenant")
        return base64.b64decode(data[tenant_id])

    def for_tenant(self, tenant_id: str) -> TenantDigester:
        data = self._load()
        if tenant_id not in data and not self._mint:
            raise InfrastructureError("this process has no digest key for the tenant")
        if tenant_id not in data:
            # under the lock and re-read: two processes must not mint two secrets
            with keys_lock(self._path.parent, "digest-keys"):
                data = self._load()
                if tenant_id not in data:
                    data[tenant_id] = base64.b64encode(secrets.token_bytes(32)).decode()
                    write_private(self._path, json.dumps(data, sort_keys=True).encode())
        return TenantDigester(base64.b64decode(data[tenant_id]))
