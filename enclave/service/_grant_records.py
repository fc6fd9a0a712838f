"""What the grant route keeps: worker credentials and admission bindings. Metadata only.

* ``worker_tokens``: replay workers (not analysts) that may ask for grants. A token is
  ``rew_<name>:<43 random characters>``; only its SHA-256 is stored (256 random bits: an
  unkeyed hash is not brute-forceable), shown once at creation, compared in constant
  time; a wrong, unknown or revoked token all fail alike.
* ``admissions``: one row per admitted audit binding it to its tenant and specimen with
  an HMAC under the tenant's transit key, computed by the service's broker identity at
  admission. A worker shares the database and could write any row, but holds no Vault
  credential, so it cannot make a binding that verifies.

Revision ``ledger/migrations/versions/0005_grants.py`` creates both tables
(``ledger.tables.WorkerTokenRow``, ``AdmissionRow``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ledger import Conflict, canonical_json
from ledger.tables import AdmissionRow, WorkerTokenRow, table_of
from ledger.transactions import read, write

from .._errors import BadInput
from .._runtime import Runtime

__all__ = [
    "WORKER_TOKEN_PREFIX",
    "Admission",
    "add_worker",
    "admission_of",
    "authenticate_worker",
    "bind_admission",
    "revoke_worker",
    "worker_name_of",
]

WORKER_TOKEN_PREFIX = "rew_"  # noqa: S105 - a public prefix that marks worker tokens
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_TOKEN = re.compile(r"rew_([a-z0-9][a-z0-9._-]{0,63}):[A-Za-z0-9_-]{43}")

worker_tokens, admissions = table_of(WorkerTokenRow), table_of(AdmissionRow)


def _stamp(now: datetime) -> str:
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def _hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def worker_name_of(token: str) -> str | None:
    """The worker name a well-formed token carries (not a proof: see ``authenticate``)."""
    match = _TOKEN.fullmatch(token) if isinstance(token, str) else None
    return None if match is None else match.group(1)


def add_worker(runtime: Runtime, name: str, *, now: datetime) -> str:
    """Register a worker; returns its token (shown once, never stored)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BadInput("worker name must be 1-64 lower-case letters, digits, '.', '_' or '-'")
    token = f"{WORKER_TOKEN_PREFIX}{name}:{secrets.token_urlsafe(32)}"
    row = {"name": name, "token_hash": _hash(token), "created_at": _stamp(now), "revoked": False}
    try:
        with write(runtime.ledger.engine) as conn:
            conn.execute(sa.insert(worker_tokens), row)
    except Conflict:
        raise BadInput("a worker with that name exists") from None
    runtime.ledger.append("worker.added", name, {"name": name, "at": row["created_at"]})
    return token


def revoke_worker(runtime: Runtime, name: str, *, now: datetime) -> None:
    """Revoke for good: the hash is replaced by one no issued token matches."""
    dead = _hash(WORKER_TOKEN_PREFIX + secrets.token_urlsafe(32))
    with write(runtime.ledger.engine) as conn:
        done = conn.execute(
            sa.update(worker_tokens)
            .where(worker_tokens.c.name == name)
            .values(revoked=True, token_hash=dead)
        )
    if done.rowcount != 1:
        raise BadInput("no such worker")
    runtime.ledger.append("worker.revoked", name, {"name": name, "at": _stamp(now)})


def authenticate_worker(runtime: Runtime, token: str) -> str | None:
    """The name of the enabled worker holding ``token``, or None (for any reason)."""
    name = worker_name_of(token)
    if name is None:
        return None
    wanted = _hash(token)
    with read(runtime.ledger.engine) as conn:
        row = (
            conn.execute(sa.select(worker_tokens).where(worker_tokens.c.name == name))
            .mappings()
            .first()
        )
    if row is None or row["revoked"] or not hmac.compare_digest(row["token_hash"], wanted):
        return None
    return name


@dataclass(frozen=True, kw_only=True)
class Admission:
    audit_id: str
    tenant_id: str
    specimen_id: str
    admitted_at: str
    mac: str

    def message(self) -> str:
        """What the MAC covers (standard base64 of canonical JSON, transit's input)."""
        body = {
            "audit_id": self.audit_id,
            "tenant_id": self.tenant_id,
            "specimen_id": self.specimen_id,
            "admitted_at": self.admitted_at,
            "purpose": "replay-enclave admission v1",
        }
        return base64.b64encode(canonical_json(body)).decode("ascii")


def bind_admission(runtime: Runtime, status: Any, *, now: datetime) -> None:
    """Bind an admitted audit (``AuditStatus``) to its specimen: a row whose MAC only
    the service's broker identity can make. Only in Vault mode; a re-delivered
    admission (same audit) keeps its first binding."""
    if runtime.provider != "transit":
        return
    unsigned = Admission(
        audit_id=str(status.audit_id),
        tenant_id=str(status.tenant_id),
        specimen_id=str(status.specimen_id),
        admitted_at=_stamp(now),
        mac="",
    )
    mac = runtime.broker.admission_mac(unsigned.tenant_id, unsigned.message())  # type: ignore[attr-defined]
    row = {**unsigned.__dict__, "mac": mac}
    try:
        with write(runtime.ledger.engine) as conn:
            conn.execute(sa.insert(admissions), row)
    except Conflict:
        pass  # the same audit admitted again (idempotent submit): the first row stands


def admission_of(runtime: Runtime, audit_id: str) -> Admission | None:
    """The binding of ``audit_id`` if its MAC verifies under its tenant's key, else None."""
    with read(runtime.ledger.engine) as conn:
        row = (
            conn.execute(sa.select(admissions).where(admissions.c.audit_id == audit_id))
            .mappings()
            .first()
        )
    if row is None:
        return None
    found = Admission(**{k: str(row[k]) for k in admissions.c.keys()})
    broker = runtime.broker
    if not broker.verify_admission_mac(found.tenant_id, found.message(), found.mac):  # type: ignore[attr-defined]
        return None
    return found
