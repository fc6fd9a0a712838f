"""Wire objects of the job system and the one time format its rows use."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger import TERMINAL_AUDIT_STATES, AuditState, canonical_json, loads

__all__ = [
    "AuditStatus",
    "ClaimedJob",
    "FailResult",
    "NEVER",
    "dumps",
    "loads_object",
    "parse_time",
    "stamp",
]

# ``available_at`` of a job that must not run until something releases it.
NEVER = "9999-12-31T23:59:59.999999Z"


def stamp(moment: datetime, plus_seconds: float = 0.0) -> str:
    """``moment`` (+ seconds) as fixed-width ISO-8601 UTC text; text order = time order."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise ValueError("now must be a timezone-aware datetime")
    value = moment.astimezone(UTC) + timedelta(seconds=plus_seconds)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def dumps(value: Any) -> str:
    """Canonical JSON text for a JSON column."""
    return canonical_json(value).decode()


def loads_object(text: str) -> dict[str, Any]:
    """A JSON object from a JSON column."""
    value = loads(text)
    if not isinstance(value, dict):
        raise ValueError("stored JSON is not an object")
    return value


@dataclass(frozen=True, kw_only=True)
class ClaimedJob:
    """A job this worker holds a lease on. ``fencing_token`` must accompany every commit."""

    job_id: str
    audit_id: str
    kind: str
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    fencing_token: int
    lease_owner: str
    lease_expires_at: datetime
    idempotency_key: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "audit_id": self.audit_id,
            "kind": self.kind,
            "payload": self.payload,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "fencing_token": self.fencing_token,
            "lease_owner": self.lease_owner,
            "lease_expires_at": stamp(self.lease_expires_at),
            "idempotency_key": self.idempotency_key,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClaimedJob:
        return cls(
            job_id=str(data["job_id"]),
            audit_id=str(data["audit_id"]),
            kind=str(data["kind"]),
            payload=dict(data["payload"]),
            attempts=int(data["attempts"]),
            max_attempts=int(data["max_attempts"]),
            fencing_token=int(data["fencing_token"]),
            lease_owner=str(data["lease_owner"]),
            lease_expires_at=parse_time(str(data["lease_expires_at"])),
            idempotency_key=str(data["idempotency_key"]),
        )


@dataclass(frozen=True, kw_only=True)
class FailResult:
    """What ``fail`` did: the job's new status and whether it ended its audit."""

    status: str  # "queued" (will be retried), "failed" or "dead"
    audit_failed: bool


@dataclass(frozen=True, kw_only=True)
class AuditStatus:
    """Where an audit stands. Metadata only: no scores, no content, no certificate body."""

    audit_id: str
    status: AuditState
    progress_done: int
    progress_total: int
    classification: str | None
    auditability: str | None
    failure_code: str | None
    has_certificate: bool
    created_at: str
    updated_at: str
    tenant_id: str
    specimen_id: str
    requester: str

    def __post_init__(self) -> None:
        # a state outside the vocabulary is a ValueError, whichever way the object is built
        object.__setattr__(self, "status", AuditState(self.status))
        if not 0 <= self.progress_done <= max(self.progress_total, 0):
            raise ValueError("progress_done must lie in 0..progress_total")

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_AUDIT_STATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "audit_id": self.audit_id,
            "status": self.status.value,
            "progress_done": self.progress_done,
            "progress_total": self.progress_total,
            "classification": self.classification,
            "auditability": self.auditability,
            "failure_code": self.failure_code,
            "has_certificate": self.has_certificate,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "tenant_id": self.tenant_id,
            "specimen_id": self.specimen_id,
            "requester": self.requester,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditStatus:
        fields = {f.name for f in dataclasses.fields(cls)}
        if set(data) != fields:
            raise ValueError("an audit status has exactly the documented fields")
        return cls(**{name: data[name] for name in fields})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> AuditStatus:
        return cls(
            audit_id=row["id"],
            status=row["status"],
            progress_done=int(row["progress_done"]),
            progress_total=int(row["progress_total"]),
            classification=row["classification"],
            auditability=row["auditability"],
            failure_code=row["failure_code"],
            has_certificate=bool(row["has_certificate"]),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            tenant_id=row["tenant_id"],
            specimen_id=row["specimen_id"],
            requester=row["requester"],
        )
