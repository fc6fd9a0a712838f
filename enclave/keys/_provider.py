"""The key-provider extension point.

Invariants every provider keeps:

1. The key-encryption key (KEK) never leaves the provider. Callers get a fresh random
   256-bit data key per specimen *and* its wrapped form; only the wrapped form is stored.
2. Wrapping is bound to ``tenant/specimen``: a wrapped key moved to another specimen
   does not unwrap.
3. Plaintext data keys for replay come only through a ``Grant``: one specimen, one job,
   expiring no later than the job lease, redeemable once, revocable. Failures are
   opaque (``GrantRefused``).
4. Where a replay's grant comes from is one small interface, ``GrantSource`` ("a grant
   for this claimed job"), chosen by configuration: ``BrokerGrants`` when this process
   holds the broker identity itself (embedded mode with local keys; the service; the
   one-process CLI flows), ``ServiceGrants`` (``_service_grants``) for a replay worker in
   Vault mode, which holds no Vault credential and asks the service for each grant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class WrappedKey:
    """A data key wrapped by a provider's KEK. Safe to store; useless without the KEK."""

    provider: str  # "local" | "transit"
    kek_id: str  # provider-specific key name (tenant key)
    kek_version: int
    blob: str  # opaque text (base64 for local, "vault:vN:..." for transit)

    def to_dict(self) -> dict[str, str | int]:
        return {
            "provider": self.provider,
            "kek_id": self.kek_id,
            "kek_version": self.kek_version,
            "blob": self.blob,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> WrappedKey:
        try:
            provider, kek_id, blob = data["provider"], data["kek_id"], data["blob"]
            version = data["kek_version"]
        except KeyError as exc:
            raise ValueError("wrapped key record is incomplete") from exc
        if not (isinstance(provider, str) and isinstance(kek_id, str) and isinstance(blob, str)):
            raise ValueError("wrapped key record has wrong types")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError("wrapped key record has wrong types")
        return cls(provider=provider, kek_id=kek_id, kek_version=version, blob=blob)


@runtime_checkable
class Grant(Protocol):
    """A single-use capability to obtain one specimen's data key for one job."""

    @property
    def accessor(self) -> str:
        """Public handle for audit records; never the secret itself."""

    @property
    def specimen_id(self) -> str: ...

    @property
    def job_id(self) -> str: ...

    @property
    def expires_at(self) -> datetime: ...

    def redeem(self, *, now: datetime) -> bytes:
        """Return the plaintext data key exactly once; otherwise ``GrantRefused``."""

    def revoke(self) -> None:
        """Make an unused grant unusable. Idempotent; safe after redeem."""


@runtime_checkable
class KeyProvider(Protocol):
    """Where KEKs live. ``LocalKeyProvider`` (embedded) and ``TransitKeyProvider``."""

    name: str

    def new_data_key(self, tenant_id: str, specimen_id: str) -> tuple[bytes, WrappedKey]:
        """A fresh 32-byte data key and its wrapped form (capture side)."""

    def issue_grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> Grant:
        """A grant for exactly this specimen and job (supervisor side only)."""

    def rewrap(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> WrappedKey:
        """Re-wrap under the tenant's newest KEK version (after ``rotate``)."""

    def rotate(self, tenant_id: str) -> int:
        """Add a KEK version for the tenant; returns the new version number."""

    def trim_versions(self, tenant_id: str, *, keep_from: int) -> None:
        """Destroy KEK versions below ``keep_from``: every data key still wrapped by
        one of them becomes unrecoverable (erasure per key version)."""


@runtime_checkable
class GrantSource(Protocol):
    """Where a replay obtains the grant for the job it holds."""

    @property
    def name(self) -> str:
        """The key provider behind the grants (``local`` | ``transit``)."""

    def for_job(self, job_id: str, fencing_token: int) -> GrantSource:
        """This source bound to one claimed job (its lease's fencing token)."""

    def grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> Grant:
        """A single-use grant for exactly this specimen (opaque ``GrantRefused`` else)."""


class BrokerGrants:
    """Grants issued by a broker identity this process holds itself (built on first use:
    a job that opens no specimen never logs in)."""

    def __init__(self, broker: Callable[[], KeyProvider], *, name: str) -> None:
        self._broker = broker
        self.name = name

    def for_job(self, job_id: str, fencing_token: int) -> GrantSource:
        return self  # the broker needs no claim: this process is the governance plane

    def grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> Grant:
        return self._broker().issue_grant(
            tenant_id, specimen_id, wrapped, job_id=job_id, ttl_seconds=ttl_seconds, now=now
        )
