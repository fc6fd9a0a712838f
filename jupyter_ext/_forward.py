"""Forwarding one known request to the enclave service under the analyst's credential.

``forward`` never raises for a service answer: it returns ``(status, JSON bytes)``.
Denials and refusals (4xx) pass through as the service gave them when they are JSON;
a service failure (5xx), a non-JSON answer or an unreachable service becomes a 502
with a one-line ``{"error": {"code", "message"}}`` and no traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx

from ._client import error_of
from ._errors import NOT_JSON, EnclaveClientError, NotConfigured
from ._routes import API_PREFIX, Route, clean_query

__all__ = ["forward", "error_body", "MAX_BODY"]

MAX_BODY = 64 * 1024


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except NOT_JSON:
        return False
    return True


async def forward(
    *,
    service_url: str,
    token: str,
    route: Route,
    path: str,
    query: Mapping[str, str],
    body: bytes | None,
    timeout: float,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[int, bytes]:
    if not service_url:
        return 503, error_body(NotConfigured.code, "the enclave service URL is not configured")
    content: bytes | None = None
    if route.has_body:
        content = body or b"{}"
        if len(content) > MAX_BODY:
            return 413, error_body("bad_request", "request body too large")
        try:
            parsed = json.loads(content)
        except NOT_JSON:
            return 400, error_body("bad_request", "request body is not JSON")
        if not isinstance(parsed, dict):
            return 400, error_body("bad_request", "request body must be a JSON object")
    url = service_url.rstrip("/") + API_PREFIX + "/" + path
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if content is not None:
        headers["Content-Type"] = "application/json"
    try:
        async with httpx.AsyncClient(timeout=timeout, transport=transport) as http:
            response = await http.request(
                route.method,
                url,
                params=clean_query(route, query),
                content=content,
                headers=headers,
            )
    except httpx.TimeoutException:
        return 504, error_body("service_timeout", f"the enclave service at {service_url} timed out")
    except (httpx.HTTPError, OSError, EnclaveClientError):
        return 502, error_body(
            "service_unavailable", f"the enclave service at {service_url} is not reachable"
        )
    status, payload = response.status_code, response.content
    if status >= 500:
        code, _ = error_of(status, payload)
        return 502, error_body("service_error", f"the enclave service failed ({status} {code})")
    if not _is_json(payload):
        if status < 400:
            return 502, error_body("bad_response", "the enclave service answered with non-JSON")
        code, message = error_of(status, payload)
        return status, error_body(code, message)
    return status, payload
