"""What a replay worker obtains from the service (Vault mode): no Vault credential here.

A worker in Vault mode holds only its worker token (``replay-enclave workers add``)
and the service's URL. For the job it has claimed it asks, in order:

1. ``POST <service>/internal/v1/grants`` with ``{job_id, fencing_token}`` and its worker
   token as bearer. The service checks the lease, the admission binding and the tenant,
   mints one wrapped decrypt for exactly that job's specimen (TTL bound to the lease)
   and answers with the wrapping token, its accessor and expiry.
2. The answer must name the specimen and tenant this process is opening; anything else
   is refused before the token is used.
3. The token becomes a ``TransitGrant.received`` — no credential of its own — whose
   ``redeem`` looks the token up (creation path ``<mount>/decrypt/<prefix><tenant>``,
   server-side TTL) and unwraps it exactly once; ``revoke`` uses the token itself.

A worker on another host holds no keyring and no signing key either. For the same job,
with the same credentials (``enclave/service/_job_secrets.py``):

* ``digest_keys()``: its tenant's digest secret, asked once per job and kept only in
  this job's copy (``POST /internal/v1/digest-keys``); an answer naming another tenant
  is refused;
* ``signer()``: a finalizer's certificate is signed by the service
  (``POST /internal/v1/signatures``), which names its own key as the issuer; the
  envelope must carry exactly the statement that was asked for.

Refusals by the service are one opaque ``GrantRefused`` (a signature refused:
``Refused`` with code ``signature_refused``); an unreachable or failing service is an
``InfrastructureError`` (the job is retried). None carries a token or a secret.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import requests

from enclave._errors import GrantRefused, InfrastructureError, Refused
from enclave.keys._digests import TenantDigester
from enclave.keys._provider import Grant, GrantSource, WrappedKey
from enclave.keys._transit import TransitGrant, _parse_time, derivation_context
from enclave.keys._vault_client import anonymous_adapter
from ledger import raise_unchained

if TYPE_CHECKING:  # cryptography and jsonschema are loaded when a certificate is signed
    from ledger.certificates import CertificateSigner

__all__ = [
    "DIGEST_KEYS_PATH",
    "GRANTS_PATH",
    "SIGNATURES_PATH",
    "GrantServiceUnavailable",
    "ServiceDigestKeys",
    "ServiceGrants",
    "ServiceSigner",
]

GRANTS_PATH = "/internal/v1/grants"
DIGEST_KEYS_PATH = "/internal/v1/digest-keys"
SIGNATURES_PATH = "/internal/v1/signatures"
_log = logging.getLogger("enclave.keys.grants")
_URL = re.compile(r"^https?://[^\s/]+(/[^\s]*)?$")


class GrantServiceUnavailable(InfrastructureError):
    code = "grant_service_unavailable"


@dataclass(frozen=True, kw_only=True)
class ServiceGrants:
    """``GrantSource`` for a worker: the service mints, the worker redeems."""

    service_url: str
    worker_token: str = field(repr=False)
    vault_addr: str
    mount: str = "transit"
    key_prefix: str = "replay-enclave-"
    verify: bool | str = True
    timeout: float = 10.0
    job_id: str | None = None
    fencing_token: int | None = None
    name: str = "transit"

    def __post_init__(self) -> None:
        if not _URL.match(self.service_url) or not _URL.match(self.vault_addr):
            raise ValueError("the grant service and Vault addresses must be http(s) URLs")
        if not self.worker_token:
            raise ValueError("a worker token is required")

    def for_job(self, job_id: str, fencing_token: int) -> GrantSource:
        return replace(self, job_id=job_id, fencing_token=fencing_token)

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
        derivation_context(tenant_id, specimen_id)  # validates both ids
        if self.job_id is None or self.fencing_token is None:
            _log.warning("key grant refused", extra={"grant_diagnostic": "no claimed job"})
            raise GrantRefused()
        answer = self._ask()
        # 2. exactly the specimen this process is opening
        try:
            token, accessor = str(answer["wrapping_token"]), str(answer["accessor"])
            same = answer["specimen_id"] == specimen_id and answer["tenant_id"] == tenant_id
            expires_at = _parse_time(str(answer["expires_at"]))
        except (KeyError, TypeError, ValueError):
            raise GrantServiceUnavailable("unexpected grant service answer") from None
        if not same:
            _log.warning(
                "key grant refused",
                extra={"grant_diagnostic": "grant names another specimen", "job_id": self.job_id},
            )
            raise GrantRefused()
        # 3. no credential: redeem looks the token up, then unwraps it once
        return TransitGrant.received(
            adapter=anonymous_adapter(self.vault_addr, verify=self.verify, timeout=self.timeout),
            token=token,
            accessor=accessor,
            specimen_id=specimen_id,
            job_id=self.job_id,
            expires_at=min(expires_at, now + timedelta(seconds=ttl_seconds)),
            expected_path=f"{self.mount.strip('/')}/decrypt/{self.key_prefix}{tenant_id}",
        )

    def digest_keys(self) -> ServiceDigestKeys:
        """This job's digest keys, from the service (one answer per job)."""
        return ServiceDigestKeys(self)

    def signer(self) -> CertificateSigner:
        """This finalizer's certificate signer: the service."""
        return ServiceSigner(self)

    def _ask(self, path: str = GRANTS_PATH, **extra: Any) -> dict[str, Any]:
        # 1. the claimed job and its fencing token; the worker token as bearer
        if self.job_id is None or self.fencing_token is None:
            raise GrantRefused()
        try:
            response = requests.post(
                self.service_url.rstrip("/") + path,
                json={"job_id": self.job_id, "fencing_token": self.fencing_token, **extra},
                headers={"Authorization": f"Bearer {self.worker_token}"},
                timeout=self.timeout,
                verify=self.verify,
                allow_redirects=False,
            )
        except requests.RequestException:  # it keeps the request: the worker token
            raise_unchained(GrantServiceUnavailable("the grant service is unavailable"))
        if 400 <= response.status_code < 500:
            _log.warning(
                "key grant refused",
                extra={"grant_diagnostic": f"service answered {response.status_code}"},
            )
            raise GrantRefused()
        try:
            if response.status_code != 200:
                raise ValueError
            body = response.json()
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:  # a decode error's ``doc`` is the answer: grants, keys
            raise_unchained(GrantServiceUnavailable("the grant service is unavailable"))
        return body


class ServiceDigestKeys:
    """``DigestSource`` of one job: the tenant's digest secret as the service gives it."""

    def __init__(self, link: ServiceGrants) -> None:
        self._link = link
        self._digesters: dict[str, TenantDigester] = {}

    def for_tenant(self, tenant_id: str) -> TenantDigester:
        if tenant_id not in self._digesters:
            answer = self._link._ask(DIGEST_KEYS_PATH)
            try:
                named = answer["tenant_id"]
                secret = base64.b64decode(str(answer["digest_key"]), validate=True)
                digester = TenantDigester(secret)
            except (KeyError, TypeError, ValueError, binascii.Error):
                raise GrantServiceUnavailable("unexpected digest key answer") from None
            if named != tenant_id:
                _log.warning(
                    "digest key refused",
                    extra={"grant_diagnostic": "key names another tenant"},
                )
                raise GrantRefused()
            self._digesters[tenant_id] = digester
        return self._digesters[tenant_id]


class ServiceSigner:
    """``CertificateSigner`` of one finalize job: the service signs what it checked."""

    def __init__(self, link: ServiceGrants) -> None:
        self._link = link

    def sign_certificate(
        self, *, specimen_id: str, manifest_digest: str, predicate: dict[str, Any]
    ) -> dict[str, Any]:
        from ledger import canonical_json
        from ledger.certificates import BadCertificateInput, Envelope, build_statement

        try:
            answer = self._link._ask(
                SIGNATURES_PATH,
                specimen_id=specimen_id,
                manifest_digest=manifest_digest,
                predicate=predicate,
            )
        except GrantRefused:
            raise Refused("the service refused to sign", code="signature_refused") from None
        try:
            envelope = answer["envelope"]
            signed = Envelope.from_dict(envelope)
            issuer = signed.signatures[0].keyid
            if not isinstance(issuer, str):
                raise TypeError
        except (KeyError, TypeError, IndexError, BadCertificateInput):
            raise GrantServiceUnavailable("unexpected signature answer") from None
        # exactly the statement asked for, with the service's key named as its issuer
        asked = build_statement(
            specimen_id=specimen_id,
            manifest_digest=manifest_digest,
            predicate={**predicate, "issuer": issuer},
        )
        if len(signed.signatures) != 1 or signed.payload != canonical_json(asked):
            raise Refused("the service signed another statement", code="signature_refused")
        return dict(envelope)
