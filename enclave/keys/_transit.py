"""Keys in Vault/OpenBao transit: one derived KEK per tenant, grants as wrapped decrypts.

Invariants (``tests/unit/keys/test_vault_grants.py`` proves each against a real OpenBao):

1. The KEK stays in transit. Tenant keys are created by setup as ``aes256-gcm96``,
   ``derived``, not exportable, no plaintext backup; this module never creates keys.
2. Every transit call carries ``context`` = standard base64 of ``"tenant/specimen"``.
   Transit derives a per-specimen key from it, so a wrapped data key presented with
   another specimen's context fails authentication inside transit.
3. The capture identity may only ask ``<mount>/datakey/plaintext/<key>``; it can never
   decrypt. The broker identity may only ``<mount>/decrypt/<key>`` with response wrapping,
   one ``ciphertext`` and one ``context`` per request (no ``batch_input``); it never sees a
   plaintext data key and cannot write policies or mint tokens.
4. A grant is one wrapping token around one specimen's decrypt, TTL at most the job lease
   (and at most ``max_grant_ttl_seconds``). ``TransitGrant.redeem`` runs these steps:

   1. the grant is unused and not revoked, and ``now`` is before ``expires_at``;
   2. ``creation_path`` is ``<mount>/decrypt/<expected key>``: read from the response to
      the broker's own wrapped decrypt when this process issued the grant (two round
      trips per job: issue + unwrap), otherwise from ``sys/wrapping/lookup`` together
      with ``creation_time + creation_ttl`` after ``now`` (a token handed over from
      elsewhere is never unwrapped unchecked);
   3. unwrap exactly once (the server burns the token whatever happens next);
   4. the plaintext is standard base64 of exactly 32 bytes.

   Any failure raises ``GrantRefused`` without a reason; the reason goes to the log
   record field ``grant_diagnostic`` (no token, ciphertext or key material).

5. Who holds the broker identity: the governance plane (the service's admission path),
   never a replay worker. The broker is split per tenant (one policy per tenant key, see
   ``policies/vault/broker-tenant.hcl``). The service mints a grant for a worker's
   claimed job and gives the wrapping token away with ``TransitGrant.hand_over`` (the
   minting side can then no longer redeem it, only revoke it); the worker rebuilds it with
   ``TransitGrant.received``, which holds no credential and goes through step 2's lookup
   before unwrapping (``enclave/keys/_service_grants.py``, ``docs/grants.md``).
6. Admission bindings: ``admission_mac``/``verify_admission_mac`` are transit HMACs
   under the tenant's key (the broker's tenant policy allows ``hmac`` and ``verify`` on
   that one key), so only the governance plane can bind an audit to its specimen.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NoReturn

import hvac.adapters

from enclave._errors import EnclaveError, GrantRefused, InfrastructureError, Refused
from enclave.keys._provider import WrappedKey
from enclave.keys._vault_client import ClientFactory, VaultSession, VaultSettings, vault_errors

__all__ = ["TransitGrant", "TransitKeyProvider", "derivation_context"]

_log = logging.getLogger("enclave.keys.transit")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_BLOB = re.compile(r"^vault:v([1-9][0-9]{0,9}):[A-Za-z0-9+/=]+$")
_DATA_KEY_BYTES = 32

_State = Literal["issued", "spent", "revoking", "revoked", "handed_over"]


def derivation_context(tenant_id: str, specimen_id: str) -> str:
    """Standard padded base64 of ``tenant/specimen`` — the transit derivation context."""
    for value in (tenant_id, specimen_id):
        if not isinstance(value, str) or not _ID.match(value):
            raise ValueError("tenant and specimen ids use letters, digits, '.', '_', ':', '-'")
    return base64.b64encode(f"{tenant_id}/{specimen_id}".encode()).decode("ascii")


def _blob_version(blob: str) -> int:
    match = _BLOB.match(blob)
    if match is None:
        raise ValueError("not a transit ciphertext")
    return int(match.group(1))


def _refused() -> EnclaveError:
    return Refused("key server refused the request", code="vault_refused")


class TransitKeyProvider:
    """``KeyProvider`` over a transit mount. One instance per identity (capture/broker/rotate).

    Give either ``client_factory`` (returns an authenticated ``hvac.Client``; called per
    operation, so it may re-login) or ``settings`` (an AppRole/token ``VaultSettings``).
    """

    name = "transit"

    def __init__(
        self,
        *,
        client_factory: ClientFactory | None = None,
        settings: VaultSettings | None = None,
        mount: str | None = None,
        key_prefix: str | None = None,
        max_grant_ttl_seconds: int = 900,
    ) -> None:
        if (client_factory is None) == (settings is None):
            raise ValueError("give exactly one of client_factory, settings")
        if settings is not None:
            client_factory = VaultSession(settings).client
            mount = mount if mount is not None else settings.mount
            key_prefix = key_prefix if key_prefix is not None else settings.key_prefix
        assert client_factory is not None
        self._client_factory: ClientFactory = client_factory
        self._mount = (mount if mount is not None else "transit").strip("/")
        self._prefix = key_prefix if key_prefix is not None else "replay-enclave-"
        if not re.match(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", self._mount):
            raise ValueError("bad transit mount")
        if not re.match(r"^[A-Za-z0-9_.-]{0,32}$", self._prefix):
            raise ValueError("bad key prefix")
        if not 1 <= max_grant_ttl_seconds <= 24 * 3600:
            raise ValueError("max_grant_ttl_seconds must be within 1 s .. 24 h")
        self._max_ttl = max_grant_ttl_seconds

    @property
    def mount(self) -> str:
        return self._mount

    def key_name(self, tenant_id: str) -> str:
        """The transit key (KEK) name for a tenant."""
        derivation_context(tenant_id, "x")  # validates the tenant id
        return self._prefix + tenant_id

    # -- capture side -----------------------------------------------------------------

    def new_data_key(self, tenant_id: str, specimen_id: str) -> tuple[bytes, WrappedKey]:
        key, context = self.key_name(tenant_id), derivation_context(tenant_id, specimen_id)
        with vault_errors("new data key", refusal=_refused):
            answer = self._client_factory().adapter.post(
                f"/v1/{self._mount}/datakey/plaintext/{key}", json={"context": context}
            )
            data = answer["data"]
            plaintext = base64.b64decode(data["plaintext"], validate=True)
            blob = str(data["ciphertext"])
            version = _blob_version(blob)
            if len(plaintext) != _DATA_KEY_BYTES:
                raise ValueError("data key has the wrong size")
        return plaintext, WrappedKey(provider=self.name, kek_id=key, kek_version=version, blob=blob)

    # -- supervisor side --------------------------------------------------------------

    def issue_grant(
        self,
        tenant_id: str,
        specimen_id: str,
        wrapped: WrappedKey,
        *,
        job_id: str,
        ttl_seconds: int,
        now: datetime,
    ) -> TransitGrant:
        """One response-wrapped decrypt of this specimen's wrapped key, for one job."""
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        if not isinstance(ttl_seconds, int) or isinstance(ttl_seconds, bool) or ttl_seconds < 1:
            raise ValueError("ttl_seconds must be a positive integer")
        if ttl_seconds > self._max_ttl:
            raise Refused("grant TTL exceeds the allowed maximum", code="grant_ttl_too_long")
        if not isinstance(job_id, str) or not _ID.match(job_id):
            raise ValueError("job ids use letters, digits, '.', '_', ':', '-'")
        key, context = self.key_name(tenant_id), derivation_context(tenant_id, specimen_id)
        if not self._matches(wrapped, key):
            _diagnose("wrapped key is not this tenant's transit key", accessor=None, job_id=job_id)
            raise GrantRefused()
        expected_path = f"{self._mount}/decrypt/{key}"
        with vault_errors("issue grant", refusal=GrantRefused):
            client = self._client_factory()
            answer = client.adapter.post(
                f"/v1/{expected_path}",
                json={"ciphertext": wrapped.blob, "context": context},
                wrap_ttl=f"{ttl_seconds}s",
            )
            info = answer["wrap_info"]
            if answer.get("data") is not None or not isinstance(info, dict):
                raise ValueError("decrypt answer was not response-wrapped")
            token, accessor = str(info["token"]), str(info["accessor"])
            created_path = str(info["creation_path"])
        if created_path != expected_path:
            _diagnose("wrapping token has an unexpected creation path", accessor, job_id)
            raise GrantRefused()
        adapter = hvac.adapters.JSONAdapter.from_adapter(client.adapter)
        adapter.token = None  # grant calls authenticate with the wrapping token only
        return TransitGrant(
            _adapter=adapter,
            _token=token,
            accessor=accessor,
            specimen_id=specimen_id,
            job_id=job_id,
            expires_at=now + timedelta(seconds=ttl_seconds),
            expected_path=expected_path,
            path_checked=True,
        )

    # -- admission bindings (broker identity, governance plane) -----------------------

    def admission_mac(self, tenant_id: str, message_b64: str) -> str:
        """Transit HMAC of ``message_b64`` (standard base64) under the tenant's key."""
        key = self.key_name(tenant_id)
        with vault_errors("admission binding", refusal=_refused):
            answer = self._client_factory().adapter.post(
                f"/v1/{self._mount}/hmac/{key}", json={"input": message_b64}
            )
            mac = str(answer["data"]["hmac"])
        if not mac.startswith("vault:v"):
            raise InfrastructureError("unexpected key server answer during admission binding")
        return mac

    def verify_admission_mac(self, tenant_id: str, message_b64: str, mac: str) -> bool:
        """Whether ``mac`` is the tenant key's HMAC of ``message_b64`` (any live version)."""
        key = self.key_name(tenant_id)
        if not isinstance(mac, str) or not mac.startswith("vault:v"):
            return False
        try:
            with vault_errors("admission check", refusal=_refused):
                answer = self._client_factory().adapter.post(
                    f"/v1/{self._mount}/verify/{key}", json={"input": message_b64, "hmac": mac}
                )
                return answer["data"]["valid"] is True
        except Refused:
            return False  # a malformed or foreign MAC is refused by transit: not valid

    # -- rotation (rotate identity) ---------------------------------------------------

    def rotate(self, tenant_id: str) -> int:
        key = self.key_name(tenant_id)
        with vault_errors("rotate key", refusal=_refused):
            client = self._client_factory()
            answer = client.adapter.post(f"/v1/{self._mount}/keys/{key}/rotate")
            if not isinstance(answer, dict) or not answer.get("data"):
                answer = client.adapter.get(f"/v1/{self._mount}/keys/{key}")
            return int(answer["data"]["latest_version"])

    def rewrap(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> WrappedKey:
        key, context = self.key_name(tenant_id), derivation_context(tenant_id, specimen_id)
        if not self._matches(wrapped, key):
            raise Refused("wrapped key is not this tenant's transit key", code="wrong_kek")
        with vault_errors("rewrap", refusal=_refused):
            answer = self._client_factory().adapter.post(
                f"/v1/{self._mount}/rewrap/{key}",
                json={"ciphertext": wrapped.blob, "context": context},
            )
            blob = str(answer["data"]["ciphertext"])
            version = _blob_version(blob)
        return WrappedKey(provider=self.name, kek_id=key, kek_version=version, blob=blob)

    def trim_versions(self, tenant_id: str, *, keep_from: int) -> None:
        """Make every KEK version below ``keep_from`` unrecoverable (crypto-shredding).

        Raises min decryption/encryption versions to ``keep_from`` and trims the older
        versions from the key ring: every data key wrapped under them is gone for good,
        for all specimens of the tenant. Per-specimen erasure is deleting the specimen's
        wrapped key record instead.
        """
        if not isinstance(keep_from, int) or isinstance(keep_from, bool) or keep_from < 1:
            raise ValueError("keep_from must be a positive version number")
        key = self.key_name(tenant_id)
        with vault_errors("trim key versions", refusal=_refused):
            client = self._client_factory()
            versions = {"min_decryption_version": keep_from, "min_encryption_version": keep_from}
            client.adapter.post(f"/v1/{self._mount}/keys/{key}/config", json=versions)
            client.adapter.post(
                f"/v1/{self._mount}/keys/{key}/trim", json={"min_available_version": keep_from}
            )

    def _matches(self, wrapped: WrappedKey, key: str) -> bool:
        if wrapped.provider != self.name or wrapped.kek_id != key:
            return False
        try:
            return _blob_version(wrapped.blob) == wrapped.kek_version
        except ValueError:
            return False


class TransitGrant:
    """A single-use wrapping token for one specimen's data key. Not serialisable.

    ``accessor`` is the wrapping token's accessor: a public handle for audit records
    (it appears HMAC'd in the server's audit log). The token itself is never exposed.
    Not thread-safe: one supervisor owns a grant.
    """

    __slots__ = (
        "_accessor",
        "_adapter",
        "_expected_path",
        "_expires_at",
        "_job_id",
        "_path_checked",
        "_specimen_id",
        "_state",
        "_token",
    )

    def __init__(
        self,
        *,
        _adapter: Any,
        _token: str,
        accessor: str,
        specimen_id: str,
        job_id: str,
        expires_at: datetime,
        expected_path: str,
        path_checked: bool = False,
    ) -> None:
        self._adapter = _adapter
        self._token = _token
        self._accessor = accessor
        self._specimen_id = specimen_id
        self._job_id = job_id
        self._expires_at = expires_at
        self._expected_path = expected_path
        # True only when this process received the token in the response to its own
        # wrapped decrypt and checked its creation path there; any other token (handed
        # over from elsewhere) is looked up on the server before it is unwrapped.
        self._path_checked = path_checked
        self._state: _State = "issued"

    @classmethod
    def received(
        cls,
        *,
        adapter: Any,
        token: str,
        accessor: str,
        specimen_id: str,
        job_id: str,
        expires_at: datetime,
        expected_path: str,
    ) -> TransitGrant:
        """A grant minted elsewhere and handed over (a worker's side). ``adapter`` carries
        no token of its own; ``redeem`` looks the wrapping token up before unwrapping."""
        adapter.token = None
        return cls(
            _adapter=adapter,
            _token=token,
            accessor=accessor,
            specimen_id=specimen_id,
            job_id=job_id,
            expires_at=expires_at,
            expected_path=expected_path,
            path_checked=False,
        )

    def hand_over(self) -> str:
        """Give the wrapping token away, once (the service to the job's worker). This
        object can no longer redeem it; it can still ``revoke`` it (a cancelled audit's
        outstanding grant), which is a no-op once the receiver has unwrapped it."""
        if self._state != "issued":
            self._refuse(f"grant is {self._state}")
        self._state = "handed_over"
        return self._token

    @property
    def accessor(self) -> str:
        return self._accessor

    @property
    def specimen_id(self) -> str:
        return self._specimen_id

    @property
    def job_id(self) -> str:
        return self._job_id

    @property
    def expires_at(self) -> datetime:
        return self._expires_at

    def __repr__(self) -> str:
        return (
            f"TransitGrant(accessor={self._accessor!r}, specimen_id={self._specimen_id!r}, "
            f"job_id={self._job_id!r}, expires_at={self._expires_at.isoformat()!r}, "
            f"state={self._state!r})"
        )

    def __reduce__(self) -> Any:
        raise TypeError("a grant cannot be serialised")

    def redeem(self, *, now: datetime) -> bytes:
        # 1. unused, not revoked, not expired by our own clock
        if self._state != "issued":
            self._refuse(f"grant is {self._state}")
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        if now >= self._expires_at:
            self._refuse("grant expired")
        # 2. the token is what we asked for: checked on the issuing response, or else
        #    looked up on the server (and alive there) before anything is unwrapped
        if not self._path_checked:
            with vault_errors("redeem grant", refusal=GrantRefused):
                info = self._adapter.post("/v1/sys/wrapping/lookup", json={"token": self._token})
                data = info["data"]
                path = str(data["creation_path"])
                server_expiry = _parse_time(str(data["creation_time"])) + timedelta(
                    seconds=int(data["creation_ttl"])
                )
            if path != self._expected_path:
                self._refuse("wrapping token was not created by the expected decrypt")
            if now >= server_expiry:
                self._refuse("wrapping token expired")
        # 3. unwrap exactly once; from here on the grant is spent whatever happens
        self._state = "spent"
        token, self._token = self._token, ""
        with vault_errors("redeem grant", refusal=GrantRefused):
            answer = self._adapter.post("/v1/sys/wrapping/unwrap", headers={"X-Vault-Token": token})
            encoded = answer["data"]["plaintext"]
        # 4. exactly one 32-byte data key
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, TypeError, ValueError):
            self._refuse("unwrapped answer is not a data key")
        if len(key) != _DATA_KEY_BYTES:
            self._refuse("unwrapped answer is not a data key")
        return key

    def revoke(self) -> None:
        """Revoke the unused wrapping token (the token revokes itself: no broker right).

        Idempotent: a redeemed, expired or already revoked grant is left as it is. If the
        server cannot be reached the grant stays unusable locally and ``InfrastructureError``
        tells the caller to retry (the token still dies at its TTL).
        """
        if self._state in ("spent", "revoked"):
            return
        self._state = "revoking"
        try:
            with vault_errors("revoke grant", refusal=GrantRefused):
                self._adapter.post(
                    "/v1/auth/token/revoke-self", headers={"X-Vault-Token": self._token}
                )
        except GrantRefused:
            pass  # already used, expired or revoked: nothing left to revoke
        self._state, self._token = "revoked", ""

    def _refuse(self, diagnostic: str) -> NoReturn:
        _diagnose(diagnostic, self._accessor, self._job_id)
        raise GrantRefused()


def _diagnose(diagnostic: str, accessor: str | None, job_id: str) -> None:
    _log.warning(
        "key grant refused",
        extra={"grant_diagnostic": diagnostic, "grant_accessor": accessor, "job_id": job_id},
    )


def _parse_time(text: str) -> datetime:
    # Go prints nanoseconds; Python keeps microseconds.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text.strip()).replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
