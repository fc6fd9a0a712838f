"""The job queue as the service uses it (``enclave.jobs``), imported on first use so
the rest of the service works where no queue is installed (503 ``jobs_unavailable``)."""

from __future__ import annotations

import importlib
from datetime import datetime
from types import ModuleType
from typing import Any

from .._runtime import Runtime
from ..replay import AuditRequest
from ._errors import ServiceError
from ._grant_records import bind_admission
from ._grants import revoke_outstanding

__all__ = [
    "audit_page",
    "audit_status",
    "cancel_audit",
    "certificate",
    "findings",
    "submit_audit",
]


def _jobs() -> ModuleType:
    try:
        return importlib.import_module("enclave.jobs")
    except ImportError:
        raise ServiceError(503, "jobs_unavailable", "the audit queue is not available") from None


def submit_audit(
    runtime: Runtime, request: AuditRequest, *, tenant_id: str, now: datetime, idempotency_key: str
) -> Any:
    status = _jobs().submit_audit(
        runtime, request, tenant_id=tenant_id, now=now, idempotency_key=idempotency_key
    )
    # Vault mode: bind the admitted audit to its specimen for the grant route
    bind_admission(runtime, status, now=now)
    return status


def audit_status(runtime: Runtime, audit_id: str) -> Any:
    return _jobs().audit_status(runtime, audit_id)


def findings(runtime: Runtime, audit_ids: list[str]) -> dict[str, str]:
    found: dict[str, str] = _jobs().findings(runtime, audit_ids)
    return found


def audit_page(
    runtime: Runtime,
    *,
    tenant_id: str,
    ranks: frozenset[int],
    limit: int,
    after: tuple[str, str] | None,
) -> Any:
    return _jobs().audit_page(runtime, tenant_id=tenant_id, ranks=ranks, limit=limit, after=after)


def cancel_audit(runtime: Runtime, audit_id: str, *, now: datetime, by: str, reason: str) -> Any:
    status = _jobs().cancel_audit(runtime, audit_id, now=now, by=by, reason=reason)
    revoke_outstanding(audit_id)  # grants handed over for its jobs and not yet used
    return status


def certificate(runtime: Runtime, audit_id: str) -> dict[str, Any] | None:
    found = _jobs().certificate(runtime, audit_id)
    return None if found is None else dict(found)
