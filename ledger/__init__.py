"""The evidence ledger: durable, append-only, verifiable metadata. Never payload bytes.

``Ledger.open(url)`` works on a SQLite file (``sqlite:///path``) or PostgreSQL
(``postgresql+psycopg://...``); ``migrate()`` creates or upgrades the schema.
"""

from typing import TYPE_CHECKING

from ._audit_state import ACTIVE_AUDIT_STATES, TERMINAL_AUDIT_STATES, AuditState
from ._errors import (
    CanonicalizationError,
    Conflict,
    LedgerError,
    LedgerIntegrityError,
    LedgerUnavailable,
    MalformedDocument,
    NotFound,
    raise_unchained,
)
from ._lazy import deferred

if TYPE_CHECKING:  # deferred below: a replay worker or a command must start without them
    from ._canonical import MAX_SAFE_INTEGER, canonical_digest, canonical_json, loads
    from ._chain import GENESIS_HASH, hash_envelope
    from ._documents import (
        REPORT_ID,
        ReportPage,
        StoredCertificate,
        StoredReport,
        certificates_by_digest,
        list_certificates,
        list_reports,
        report_id_of,
        report_page,
        store_certificate,
        store_report,
        stored_certificate,
        stored_report,
    )
    from ._engine import make_engine
    from ._head import read_saved_head
    from ._ledger import Ledger, utc_clock
    from ._records import (
        AdapterInfo,
        EffectInfo,
        EntryRecord,
        FieldRecord,
        LedgerPosition,
        Retention,
        RunStatus,
        SpecimenRecord,
        StepKind,
        StepRecord,
        VerifyReport,
    )
    from ._summaries import SpecimenFilter, SpecimenPage, read_summaries
    from ._summary_record import Classification, SpecimenSummary
__getattr__ = deferred(
    __name__,
    globals(),
    {
        "MAX_SAFE_INTEGER": "._canonical",
        "canonical_digest": "._canonical",
        "canonical_json": "._canonical",
        "loads": "._canonical",
        "GENESIS_HASH": "._chain",
        "hash_envelope": "._chain",
        "REPORT_ID": "._documents",
        "ReportPage": "._documents",
        "StoredCertificate": "._documents",
        "StoredReport": "._documents",
        "certificates_by_digest": "._documents",
        "list_certificates": "._documents",
        "list_reports": "._documents",
        "report_id_of": "._documents",
        "report_page": "._documents",
        "store_certificate": "._documents",
        "store_report": "._documents",
        "stored_certificate": "._documents",
        "stored_report": "._documents",
        "make_engine": "._engine",
        "read_saved_head": "._head",
        "Ledger": "._ledger",
        "utc_clock": "._ledger",
        "read_summaries": "._summaries",
        "SpecimenFilter": "._summaries",
        "SpecimenPage": "._summaries",
        "AdapterInfo": "._records",
        "Classification": "._summary_record",
        "EffectInfo": "._records",
        "EntryRecord": "._records",
        "FieldRecord": "._records",
        "LedgerPosition": "._records",
        "Retention": "._records",
        "RunStatus": "._records",
        "SpecimenRecord": "._records",
        "SpecimenSummary": "._summary_record",
        "StepKind": "._records",
        "StepRecord": "._records",
        "VerifyReport": "._records",
    },
)

__all__ = [
    "ACTIVE_AUDIT_STATES",
    "AdapterInfo",
    "AuditState",
    "CanonicalizationError",
    "Classification",
    "Conflict",
    "EffectInfo",
    "EntryRecord",
    "FieldRecord",
    "GENESIS_HASH",
    "Ledger",
    "LedgerError",
    "LedgerIntegrityError",
    "LedgerPosition",
    "LedgerUnavailable",
    "MAX_SAFE_INTEGER",
    "MalformedDocument",
    "NotFound",
    "REPORT_ID",
    "ReportPage",
    "Retention",
    "RunStatus",
    "SpecimenFilter",
    "SpecimenPage",
    "SpecimenRecord",
    "SpecimenSummary",
    "StepKind",
    "StepRecord",
    "StoredCertificate",
    "StoredReport",
    "TERMINAL_AUDIT_STATES",
    "VerifyReport",
    "canonical_digest",
    "canonical_json",
    "certificates_by_digest",
    "hash_envelope",
    "list_certificates",
    "list_reports",
    "loads",
    "make_engine",
    "raise_unchained",
    "read_saved_head",
    "read_summaries",
    "report_id_of",
    "report_page",
    "store_certificate",
    "store_report",
    "stored_certificate",
    "stored_report",
    "utc_clock",
]
