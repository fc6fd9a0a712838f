"""The known routes of the enclave service API (prefix ``/api/v1``), and nothing else.

Both the server extension and the kernel-side client go through ``match_route``: a
path that is not one of these, an identifier outside ``ID_PATTERN`` or a query key
that the route does not take is refused before any request leaves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["API_PREFIX", "ID_PATTERN", "ROUTES", "Route", "match_route", "clean_query"]

API_PREFIX = "/api/v1"
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
_ID = f"(?P<id>{ID_PATTERN})"


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    name: str
    pattern: re.Pattern[str]
    query: frozenset[str] = frozenset()
    has_body: bool = False


def _route(
    method: str, name: str, pattern: str, query: tuple[str, ...] = (), body: bool = False
) -> Route:
    return Route(method, name, re.compile(pattern), frozenset(query), body)


ROUTES: tuple[Route, ...] = (
    _route("GET", "whoami", "whoami"),
    _route("GET", "specimens", "specimens", ("tenant", "agent", "auditability", "limit", "cursor")),
    _route("GET", "specimen", f"specimens/{_ID}"),
    _route("GET", "policies", "policies", ("status", "tenant")),
    _route("POST", "request_audit", "audits", body=True),
    _route("GET", "audits", "audits", ("limit", "cursor")),
    _route("GET", "audit", f"audits/{_ID}"),
    _route("POST", "cancel_audit", f"audits/{_ID}/cancel"),
    _route("GET", "certificate", f"certificates/{_ID}"),
    _route("GET", "certificate_summary", f"certificates/{_ID}/summary"),
    _route("GET", "certificate_verify", f"certificates/{_ID}/verify"),
    _route("GET", "certificate_bundle", f"certificates/{_ID}/bundle"),
    _route("GET", "reports", "reports", ("limit", "cursor")),
    _route("GET", "report", f"reports/{_ID}"),
    _route("GET", "report_summary", f"reports/{_ID}/summary"),
    _route("GET", "report_bundle", f"reports/{_ID}/bundle"),
    _route("GET", "ledger_head", "ledger/head"),
    _route("GET", "ledger_verify", "ledger/verify"),
)


def match_route(method: str, path: str) -> Route | None:
    """The route for ``method`` and ``path`` (relative, no leading slash), or None."""
    for route in ROUTES:
        # fullmatch: ``$`` would also match before a trailing newline
        if route.method == method and route.pattern.fullmatch(path):
            return route
    return None


def clean_query(route: Route, query: Mapping[str, str | None]) -> dict[str, str]:
    """Only the query keys the route takes, with empty values dropped."""
    return {k: str(v) for k, v in query.items() if k in route.query and v not in (None, "")}
