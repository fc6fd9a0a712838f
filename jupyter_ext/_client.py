"""A small synchronous client of the enclave service API, used by the panel and magics.

It speaks only the routes in ``_routes`` and returns parsed JSON; every transport or
HTTP failure becomes one of this package's errors (``_errors``) at this boundary.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import httpx

from ._errors import (
    NOT_JSON,
    BadResponse,
    NotARoute,
    NotConfigured,
    ServiceRefused,
    ServiceUnavailable,
)
from ._routes import API_PREFIX, clean_query, match_route
from ._wire import AuditRequestBody, AuditStatus, VerifyReport

__all__ = ["EnclaveClient", "error_of", "URL_ENV", "TOKEN_ENV", "TOKEN_FILE_ENV"]

URL_ENV = "REPLAY_ENCLAVE_URL"
TOKEN_ENV = "REPLAY_ENCLAVE_TOKEN"  # noqa: S105 (the name of a variable, not a secret)
TOKEN_FILE_ENV = "REPLAY_ENCLAVE_TOKEN_FILE"  # noqa: S105 (a variable name)
_MAX_MESSAGE = 300


def error_of(status: int, body: bytes) -> tuple[str, str]:
    """``(code, message)`` of a service error answer ``{"error": {"code", "message"}}``;
    a generic pair when the body has another shape (its content is not echoed)."""
    try:
        data = json.loads(body)
    except NOT_JSON:
        data = None
    if isinstance(data, Mapping):
        err = data.get("error")
        if isinstance(err, Mapping) and isinstance(err.get("code"), str):
            return err["code"], str(err.get("message") or "")[:_MAX_MESSAGE]
        if isinstance(data.get("detail"), str):
            return f"http_{status}", data["detail"][:_MAX_MESSAGE]
    return f"http_{status}", httpx.codes.get_reason_phrase(status) or "error"


def read_token(*, token_env: str = TOKEN_ENV, token_file: str | None = None) -> str:
    """The analyst bearer token from a file (if named) or an environment variable."""
    path = token_file or os.environ.get(TOKEN_FILE_ENV)
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise NotConfigured("the analyst token file cannot be read") from exc
    else:
        token = os.environ.get(token_env, "").strip()
    if not token:
        raise NotConfigured(f"no analyst token: set {token_env} (or a token file)")
    return token


class EnclaveClient:
    """``EnclaveClient(base_url="http://127.0.0.1:8800", token=...)``.

    ``base_url`` is the enclave service root; ``api_prefix`` defaults to ``/api/v1``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        api_prefix: str = API_PREFIX,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        if not token:
            raise ValueError("token must not be empty")
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url + api_prefix,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"EnclaveClient(base_url={self.base_url!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EnclaveClient:
        env = os.environ if env is None else env
        url = env.get(URL_ENV, "").strip()
        if not url:
            raise NotConfigured(f"no enclave service URL: set {URL_ENV}")
        token_file = env.get(TOKEN_FILE_ENV) or None
        if token_file is None:
            token = env.get(TOKEN_ENV, "").strip()
            if not token:
                raise NotConfigured(f"no analyst token: set {TOKEN_ENV}")
        else:
            token = read_token(token_file=token_file)
        return cls(base_url=url, token=token)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EnclaveClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- transport -----------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Any:
        route = match_route(method, path)
        if route is None:
            raise NotARoute(f"not a known enclave route: {method} {path.split('/')[0]}")
        params = clean_query(
            route, {k: None if v is None else str(v) for k, v in (query or {}).items()}
        )
        try:
            response = self._http.request(
                method, "/" + path, params=params, json=dict(body or {}) if route.has_body else None
            )
        except httpx.TimeoutException as exc:
            raise ServiceUnavailable(f"the enclave service at {self.base_url} timed out") from exc
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(
                f"the enclave service at {self.base_url} is not reachable"
            ) from exc
        if response.status_code >= 500:
            code, _ = error_of(response.status_code, response.content)
            raise ServiceUnavailable(
                f"the enclave service failed on {route.name} ({response.status_code} {code})"
            )
        if response.status_code >= 400:
            code, message = error_of(response.status_code, response.content)
            raise ServiceRefused(status=response.status_code, code=code, message=message)
        try:
            data = response.json()
        except NOT_JSON:
            data = None
        if not isinstance(data, dict):  # every answer of the service is an object
            raise BadResponse(f"the enclave service answered {route.name} with no JSON object")
        return data

    # -- the API ---------------------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        return dict(self.call("GET", "whoami"))

    def specimens(
        self,
        *,
        tenant: str | None = None,
        agent: str | None = None,
        auditability: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page: ``{"items", "limit", "next", "total"}``; pass ``next`` as ``cursor``
        for the following page (``None``: there is none)."""
        query = {
            "tenant": tenant,
            "agent": agent,
            "auditability": auditability,
            "limit": limit,
            "cursor": cursor,
        }
        return dict(self.call("GET", "specimens", query=query))

    def specimen(self, specimen_id: str) -> dict[str, Any]:
        return dict(self.call("GET", f"specimens/{specimen_id}"))

    def policies(self, *, status: str | None = "active") -> list[dict[str, Any]]:
        data = self.call("GET", "policies", query={"status": status})
        return list(data.get("items", [])) if isinstance(data, Mapping) else []

    def request_audit(self, body: AuditRequestBody) -> AuditStatus:
        return AuditStatus.from_dict(self.call("POST", "audits", body=body.to_dict()))

    def audits(self, *, limit: int = 50, cursor: str | None = None) -> list[AuditStatus]:
        """The newest ``limit`` audits (after ``cursor``, a page's ``next``)."""
        data = self.call("GET", "audits", query={"limit": limit, "cursor": cursor})
        items = data.get("items", []) if isinstance(data, Mapping) else data
        if not isinstance(items, list):
            raise BadResponse("audit list is not a list")
        return [AuditStatus.from_dict(item) for item in items]

    def audit(self, audit_id: str) -> AuditStatus:
        return AuditStatus.from_dict(self.call("GET", f"audits/{audit_id}"))

    def cancel(self, audit_id: str) -> AuditStatus:
        return AuditStatus.from_dict(self.call("POST", f"audits/{audit_id}/cancel", body={}))

    def certificate(self, audit_id: str) -> dict[str, Any]:
        """The signed DSSE envelope, as JSON."""
        return dict(self.call("GET", f"certificates/{audit_id}"))

    def certificate_summary(self, audit_id: str) -> dict[str, Any]:
        """The decoded predicate of the certificate."""
        return dict(self.call("GET", f"certificates/{audit_id}/summary"))

    def verify(self, audit_id: str) -> VerifyReport:
        return VerifyReport.from_dict(self.call("GET", f"certificates/{audit_id}/verify"))

    def reports(self, *, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """One page of release reports, newest first: ``{"items", "limit", "next",
        "total"}``, each item ``{report_id, issued_at, gate_passed, specimens,
        selection_digest}``; pass ``next`` as ``cursor`` for the following page."""
        return dict(self.call("GET", "reports", query={"limit": limit, "cursor": cursor}))

    def report(self, report_id: str) -> dict[str, Any]:
        """The signed release report (DSSE envelope), as JSON."""
        return dict(self.call("GET", f"reports/{report_id}"))

    def report_summary(self, report_id: str) -> dict[str, Any]:
        """The decoded predicate of the release report."""
        return dict(self.call("GET", f"reports/{report_id}/summary"))

    def ledger_head(self) -> dict[str, Any]:
        return dict(self.call("GET", "ledger/head"))

    def ledger_verify(self) -> dict[str, Any]:
        return dict(self.call("GET", "ledger/verify"))
