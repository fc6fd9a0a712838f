"""Audits' findings in words, read only for whoever may see them.

The finding is the certificate's figures as a sentence (``ledger.certificates.finding``),
so it is derived here, on request, for the audits a caller has already been allowed
to read the certificate of — never as part of a status read, which every poll, list
and authorisation lookup makes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa

from ledger import AuditState
from ledger.certificates import envelope_finding, failed_finding
from ledger.tables import AuditRow, table_of
from ledger.transactions import guarded, read

from .._runtime import Runtime

__all__ = ["findings"]

_audits = table_of(AuditRow)


@guarded("jobs.findings")
def findings(runtime: Runtime, audit_ids: Sequence[str]) -> dict[str, str]:
    """The finding of each audit that has one: its certificate's, or a failed audit's.
    Audits still running, cancelled or unknown are absent. One statement for all."""
    if not audit_ids:
        return {}
    columns = (_audits.c.id, _audits.c.status, _audits.c.failure_code, _audits.c.certificate_json)
    with read(runtime.ledger.engine) as conn:
        rows = conn.execute(sa.select(*columns).where(_audits.c.id.in_(list(audit_ids)))).all()
    found: dict[str, str] = {}
    for audit_id, status, failure_code, certificate_json in rows:
        if certificate_json is not None:
            # the database's own record, checked when it was signed
            found[audit_id] = envelope_finding(json.loads(certificate_json), checked=True)
        elif status == AuditState.FAILED:
            found[audit_id] = failed_finding(failure_code or "failed")
    return found
