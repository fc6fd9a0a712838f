"""Analysts: named people of one tenant with roles, authenticated by a bearer token.

The token is shown once, at creation; only its SHA-256 is stored (the token carries
256 random bits, so an unkeyed hash is not brute-forceable). Authentication looks the
hash up and compares in constant time; a wrong, unknown or disabled token all fail the
same way.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ledger import Conflict, canonical_json, loads
from ledger.transactions import ANALYSTS_VIEW, read, write

from .._errors import BadInput
from .._runtime import Runtime
from ..store import validate_id

__all__ = [
    "KNOWN_ROLES",
    "TOKEN_PREFIX",
    "Analyst",
    "add_analyst",
    "authenticate",
    "disable_analyst",
    "list_analysts",
    "revoke_analyst",
    "rotate_token",
    "token_hash",
]

TOKEN_PREFIX = "rea_"  # noqa: S105 - a public prefix that marks our tokens, not a secret
# viewer: read metadata and certificates; auditor: viewer + request audits and cancel
# their own; tenant-admin: viewer + cancel any audit of the tenant; restricted-clearance:
# may open restricted specimens and what derives from them; legal-hold-reviewer: may
# request audits of specimens under legal hold; operator: the ledger's head and chain
# (they span tenants). See policies/access/*.cedar.
KNOWN_ROLES = frozenset(
    {
        "viewer",
        "auditor",
        "tenant-admin",
        "restricted-clearance",
        "legal-hold-reviewer",
        "operator",
    }
)
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_TOKEN = re.compile(r"rea_[A-Za-z0-9_-]{43}")


@dataclass(frozen=True, kw_only=True)
class Analyst:
    name: str
    tenant: str
    roles: tuple[str, ...]
    created_at: str
    disabled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tenant": self.tenant,
            "roles": list(self.roles),
            "created_at": self.created_at,
            "disabled": self.disabled,
        }


def token_hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def _roles(roles: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    unknown = set(roles) - KNOWN_ROLES
    if unknown or not roles:
        raise BadInput("roles must be one or more of: " + ", ".join(sorted(KNOWN_ROLES)))
    return tuple(sorted(set(roles)))


def _row(row: Any) -> Analyst:
    roles = loads(row["roles_json"])
    if not isinstance(roles, list):
        raise ValueError("stored roles are malformed")
    return Analyst(
        name=row["name"],
        tenant=row["tenant"],
        roles=tuple(roles),
        created_at=row["created_at"],
        disabled=bool(row["disabled"]),
    )


def add_analyst(
    runtime: Runtime, name: str, *, tenant: str, roles: list[str] | tuple[str, ...], now: datetime
) -> tuple[Analyst, str]:
    """Create an analyst; returns it and its bearer token (shown once, never stored)."""
    from ledger.tables import AnalystRow, table_of

    table = table_of(AnalystRow)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BadInput("analyst name must be 1-64 lower-case letters, digits, '.', '_' or '-'")
    validate_id(tenant, what="tenant id")
    analyst = Analyst(
        name=name,
        tenant=tenant,
        roles=_roles(roles),
        created_at=now.isoformat(timespec="seconds").replace("+00:00", "Z"),
    )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with write(runtime.ledger.engine) as conn:
            conn.execute(
                sa.insert(table),
                {
                    "name": analyst.name,
                    "tenant": analyst.tenant,
                    "roles_json": canonical_json(list(analyst.roles)).decode(),
                    "token_hash": token_hash(token),
                    "created_at": analyst.created_at,
                    "disabled": False,
                },
            )
    except Conflict:
        raise BadInput("an analyst with that name exists") from None
    runtime.ledger.append(
        "analyst.added",
        analyst.name,
        {
            "name": analyst.name,
            "tenant": analyst.tenant,
            "roles": list(analyst.roles),
            "at": analyst.created_at,
        },
    )
    return analyst, token


def list_analysts(runtime: Runtime, *, tenant: str | None = None) -> list[Analyst]:
    table = ANALYSTS_VIEW  # a read: the Core view, so listing does not load SQLModel
    query = sa.select(table).order_by(table.c.name)
    if tenant is not None:
        query = query.where(table.c.tenant == tenant)
    with read(runtime.ledger.engine) as conn:
        return [_row(row) for row in conn.execute(query).mappings()]


def disable_analyst(runtime: Runtime, name: str, *, now: datetime) -> None:
    from ledger.tables import AnalystRow, table_of

    table = table_of(AnalystRow)
    with write(runtime.ledger.engine) as conn:
        done = conn.execute(sa.update(table).where(table.c.name == name).values(disabled=True))
    if done.rowcount != 1:
        raise BadInput("no such analyst")
    runtime.ledger.append("analyst.disabled", name, {"name": name, "at": now.isoformat()})


def _stamp(now: datetime) -> str:
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def revoke_analyst(runtime: Runtime, name: str, *, now: datetime) -> None:
    """Disable the analyst for good: the token stops working at the next request, and
    its hash is replaced so no later change can bring it back. Recorded in the ledger."""
    from ledger.tables import AnalystRow, table_of

    table = table_of(AnalystRow)
    dead = token_hash(TOKEN_PREFIX + secrets.token_urlsafe(32))  # matches no issued token
    with write(runtime.ledger.engine) as conn:
        done = conn.execute(
            sa.update(table).where(table.c.name == name).values(disabled=True, token_hash=dead)
        )
    if done.rowcount != 1:
        raise BadInput("no such analyst")
    runtime.ledger.append("analyst.revoked", name, {"name": name, "at": _stamp(now)})


def rotate_token(runtime: Runtime, name: str, *, now: datetime) -> str:
    """Issue the analyst a new token (returned, shown once); the old one stops working
    at the next request. A revoked analyst stays revoked. Recorded in the ledger."""
    from ledger.tables import AnalystRow, table_of

    table = table_of(AnalystRow)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with write(runtime.ledger.engine) as conn:
        done = conn.execute(
            sa.update(table)
            .where(table.c.name == name, table.c.disabled == sa.false())
            .values(token_hash=token_hash(token))
        )
    if done.rowcount != 1:
        raise BadInput("no such enabled analyst")
    runtime.ledger.append("analyst.rotated", name, {"name": name, "at": _stamp(now)})
    return token


def authenticate(runtime: Runtime, token: str) -> Analyst | None:
    """The enabled analyst holding ``token``, or None (for any reason)."""
    from ledger.tables import AnalystRow, table_of

    table = table_of(AnalystRow)
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        return None
    wanted = token_hash(token)
    with read(runtime.ledger.engine) as conn:
        row = conn.execute(sa.select(table).where(table.c.token_hash == wanted)).mappings().first()
    if row is None or not hmac.compare_digest(row["token_hash"], wanted) or row["disabled"]:
        return None
    return _row(row)
