"""Certificates and release reports: ledger content, stored in the ledger's database.

A worker on another host shares only the database with whoever reads its results, so
the signed envelopes live in two tables: ``certificates`` (one row per audit, written
right after the audit's ``certificate.issued`` entry) and ``release_reports`` (one row
per report, written right after its ``release.reported`` entry). Files are exports,
written by the enclave (``enclave/_exports.py``). Both writes are idempotent: a
re-delivered finalizer signs the same statement, and storing the same envelope again
changes nothing; a different envelope for the same id is a ``Conflict``.

Nothing here sees plaintext: certificates carry digests and bounded numbers, reports
certificate digests and labels.

The tables are declared in ``ledger.tables``, which loads SQLModel: the writes import
them when they run, and the reads select through the Core views of ``ledger._views``,
so a command that lists or exports certificates or reports does not load SQLModel.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ._canonical import canonical_digest, canonical_json, loads
from ._errors import Conflict, LedgerError, MalformedDocument
from ._transactions import guarded, read, write
from ._views import CERTIFICATES_VIEW, RELEASE_REPORTS_VIEW

__all__ = [
    "REPORT_ID",
    "ReportPage",
    "StoredCertificate",
    "StoredReport",
    "certificates_by_digest",
    "list_certificates",
    "list_reports",
    "report_id_of",
    "report_page",
    "store_certificate",
    "store_report",
    "stored_certificate",
    "stored_report",
]

#: A release report's id: ``rr-`` and the first 16 hex digits of its envelope digest.
REPORT_ID = re.compile(r"rr-[0-9a-f]{16}")


def _envelope(text: str) -> dict[str, Any]:
    value = loads(text)
    if not isinstance(value, dict):
        raise LedgerError("a stored envelope is not a JSON object")
    return value


def _statement(envelope: Mapping[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
    except (KeyError, TypeError, ValueError, binascii.Error):
        raise MalformedDocument("the envelope's payload is not a statement") from None
    if not isinstance(value, dict) or not isinstance(value.get("predicate"), dict):
        raise MalformedDocument("the envelope's payload is not a statement")
    return value


def _text(envelope: Mapping[str, Any]) -> str:
    return canonical_json(envelope).decode("utf-8")


# --- certificates ----------------------------------------------------------------


@dataclass(frozen=True)
class StoredCertificate:
    audit_id: str
    specimen_id: str
    tenant_id: str
    envelope_digest: str
    classification: str
    issued_at: str
    envelope: dict[str, Any]  # empty in a listing (``list_certificates``)


def _certificate(row: Any) -> StoredCertificate:
    return StoredCertificate(
        audit_id=str(row.audit_id),
        specimen_id=str(row.specimen_id),
        tenant_id=str(row.tenant_id),
        envelope_digest=str(row.envelope_digest),
        classification=str(row.classification),
        issued_at=str(row.issued_at),
        envelope=_envelope(row.envelope_json),
    )


def store_certificate(
    engine: Engine,
    *,
    audit_id: str,
    specimen_id: str,
    tenant_id: str,
    envelope: Mapping[str, Any],
) -> StoredCertificate:
    """Store an audit's signed certificate (idempotent; another envelope for the same
    audit is a ``Conflict``)."""
    from .tables import CertificateRow, table_of

    certificates = table_of(CertificateRow)
    predicate = _statement(envelope)["predicate"]
    stored = StoredCertificate(
        audit_id=audit_id,
        specimen_id=specimen_id,
        tenant_id=tenant_id,
        envelope_digest=canonical_digest(envelope),
        classification=str(predicate.get("classification")),
        issued_at=str(predicate.get("issued_at")),
        envelope=dict(envelope),
    )
    with write(engine, operation="certificates.store") as conn:
        found = conn.execute(
            sa.select(certificates.c.envelope_digest).where(certificates.c.audit_id == audit_id)
        ).first()
        if found is not None:
            if found[0] != stored.envelope_digest:
                raise Conflict("the audit already has another certificate")
            return stored
        conn.execute(
            sa.insert(certificates).values(
                audit_id=audit_id,
                specimen_id=specimen_id,
                tenant_id=tenant_id,
                envelope_digest=stored.envelope_digest,
                classification=stored.classification,
                issued_at=stored.issued_at,
                envelope_json=_text(envelope),
            )
        )
    return stored


@guarded("certificates.read")
def stored_certificate(engine: Engine, audit_id: str) -> StoredCertificate | None:
    certificates = CERTIFICATES_VIEW
    with read(engine) as conn:
        row = conn.execute(
            sa.select(certificates).where(certificates.c.audit_id == audit_id)
        ).first()
    return None if row is None else _certificate(row)


@guarded("certificates.read")
def certificates_by_digest(engine: Engine, digests: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored envelopes with these envelope digests (absent ones are left out)."""
    certificates = CERTIFICATES_VIEW
    wanted = sorted(set(digests))
    found: dict[str, dict[str, Any]] = {}
    with read(engine) as conn:
        for start in range(0, len(wanted), 500):
            rows = conn.execute(
                sa.select(certificates.c.envelope_digest, certificates.c.envelope_json).where(
                    certificates.c.envelope_digest.in_(wanted[start : start + 500])
                )
            )
            for digest, text in rows:
                found[str(digest)] = _envelope(text)
    return found


@guarded("certificates.read")
def list_certificates(engine: Engine, *, specimen_id: str | None = None) -> list[StoredCertificate]:
    """The stored certificates, oldest first (without their envelopes)."""
    certificates = CERTIFICATES_VIEW
    query = sa.select(*[c for c in certificates.c if c.name != "envelope_json"])
    if specimen_id is not None:
        query = query.where(certificates.c.specimen_id == specimen_id)
    with read(engine) as conn:
        rows = conn.execute(query.order_by(certificates.c.issued_at, certificates.c.audit_id)).all()
    return [
        StoredCertificate(
            audit_id=str(r.audit_id),
            specimen_id=str(r.specimen_id),
            tenant_id=str(r.tenant_id),
            envelope_digest=str(r.envelope_digest),
            classification=str(r.classification),
            issued_at=str(r.issued_at),
            envelope={},
        )
        for r in rows
    ]


# --- release reports ----------------------------------------------------------------


@dataclass(frozen=True)
class StoredReport:
    report_id: str
    envelope_digest: str
    selection_digest: str
    issued_at: str
    gate_passed: bool
    specimens: int
    tenant_id: str | None  # None: its specimens span tenants (operators only)
    envelope: dict[str, Any]  # empty in a listing (``report_page``, ``list_reports``)

    def summary(self) -> dict[str, Any]:
        """The listing's item: metadata only."""
        return {
            "report_id": self.report_id,
            "issued_at": self.issued_at,
            "gate_passed": self.gate_passed,
            "specimens": self.specimens,
            "selection_digest": self.selection_digest,
        }

    @property
    def predicate(self) -> dict[str, Any]:
        predicate: dict[str, Any] = _statement(self.envelope)["predicate"]
        return predicate


def _report(row: Any, envelope: dict[str, Any] | None = None) -> StoredReport:
    return StoredReport(
        report_id=str(row.report_id),
        envelope_digest=str(row.envelope_digest),
        selection_digest=str(row.selection_digest),
        issued_at=str(row.issued_at),
        gate_passed=bool(row.gate_passed),
        specimens=int(row.specimens),
        tenant_id=None if row.tenant_id is None else str(row.tenant_id),
        envelope=envelope if envelope is not None else {},
    )


def report_id_of(envelope: Mapping[str, Any]) -> str:
    """``rr-`` and the first 16 hex digits of the report's envelope digest."""
    return "rr-" + canonical_digest(envelope).split(":", 1)[1][:16]


def store_report(
    engine: Engine, envelope: Mapping[str, Any], *, tenant_id: str | None
) -> StoredReport:
    """Store a signed release report (idempotent); ``tenant_id`` is the one tenant all
    its specimens belong to, ``None`` when they span tenants."""
    from .tables import ReleaseReportRow, table_of

    release_reports = table_of(ReleaseReportRow)
    predicate = _statement(envelope)["predicate"]
    stored = StoredReport(
        report_id=report_id_of(envelope),
        envelope_digest=canonical_digest(envelope),
        selection_digest=str(predicate["selection_digest"]),
        issued_at=str(predicate["issued_at"]),
        gate_passed=bool(predicate["gate"]["passed"]),
        specimens=len(predicate.get("specimens") or ()),
        tenant_id=tenant_id,
        envelope=dict(envelope),
    )
    with write(engine, operation="release_reports.store") as conn:
        found = conn.execute(
            sa.select(release_reports.c.envelope_digest).where(
                release_reports.c.report_id == stored.report_id
            )
        ).first()
        if found is not None:
            if found[0] != stored.envelope_digest:
                raise Conflict("another report has that id")
            return stored
        conn.execute(
            sa.insert(release_reports).values(
                report_id=stored.report_id,
                envelope_digest=stored.envelope_digest,
                selection_digest=stored.selection_digest,
                issued_at=stored.issued_at,
                gate_passed=stored.gate_passed,
                specimens=stored.specimens,
                tenant_id=tenant_id,
                envelope_json=_text(envelope),
            )
        )
    return stored


@guarded("release_reports.read")
def stored_report(engine: Engine, report_id: str) -> StoredReport | None:
    """The report with this id (with its envelope), or ``None``."""
    release_reports = RELEASE_REPORTS_VIEW
    if not REPORT_ID.fullmatch(report_id):
        return None
    with read(engine) as conn:
        row = conn.execute(
            sa.select(release_reports).where(release_reports.c.report_id == report_id)
        ).first()
    return None if row is None else _report(row, _envelope(row.envelope_json))


@dataclass(frozen=True)
class ReportPage:
    items: list[StoredReport]  # without envelopes
    next_after: tuple[str, str] | None  # (issued_at, report_id) of the last item
    total: int


@guarded("release_reports.read")
def report_page(
    engine: Engine,
    *,
    tenant_id: str | None,
    every_tenant: bool = False,
    limit: int,
    after: tuple[str, str] | None = None,
) -> ReportPage:
    """Newest first, one keyset page. ``every_tenant``: all reports (operators);
    otherwise the reports of ``tenant_id`` only (never those spanning tenants)."""
    release_reports = RELEASE_REPORTS_VIEW
    if limit < 1:
        raise ValueError("limit must be positive")
    where: list[Any] = []
    if not every_tenant:
        if tenant_id is None:
            return ReportPage([], None, 0)
        where.append(release_reports.c.tenant_id == tenant_id)
    page_where = list(where)
    if after is not None:
        issued, rid = after
        page_where.append(
            sa.or_(
                release_reports.c.issued_at < issued,
                sa.and_(release_reports.c.issued_at == issued, release_reports.c.report_id < rid),
            )
        )
    with read(engine, snapshot=True) as conn:
        rows = conn.execute(
            sa.select(*[c for c in release_reports.c if c.name != "envelope_json"])
            .where(*page_where)
            .order_by(release_reports.c.issued_at.desc(), release_reports.c.report_id.desc())
            .limit(limit + 1)
        ).all()
        total = conn.execute(
            sa.select(sa.func.count()).select_from(release_reports).where(*where)
        ).scalar_one()
    items = [_report(r) for r in rows[:limit]]
    more = len(rows) > limit
    last = items[-1] if items and more else None
    return ReportPage(items, None if last is None else (last.issued_at, last.report_id), total)


def list_reports(engine: Engine) -> list[StoredReport]:
    """Every stored report, newest first (without envelopes)."""
    out: list[StoredReport] = []
    after: tuple[str, str] | None = None
    while True:
        page = report_page(engine, tenant_id=None, every_tenant=True, limit=500, after=after)
        out.extend(page.items)
        if page.next_after is None:
            return out
        after = page.next_after
