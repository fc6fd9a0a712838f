"""Every table of the ledger's database, declared once, as SQLModel table classes.

One module per concern: the chain (``_chain``), audit jobs (``_jobs``), governance
(``_governance``), grants (``_grants``), the specimen library (``_library``), the
database payload store with the audits' sealed inference answers (``_payloads``) and
the signed documents (``_documents``). None of them holds plaintext: the payload
store's rows are ciphertext and wrapped keys.

Alembic revisions in ``ledger/migrations/versions`` create the tables (never
``create_all``); ``METADATA`` is what the migration environment compares against, and
``tests/unit/ledger/test_tables.py`` checks that the migrated schema and ``METADATA`` agree.

Importing this package loads SQLModel (and pydantic). Modules on a start-up path import
it inside the functions that run statements, so a command that never touches these
tables never pays for it. Statements use SQLAlchemy Core on ``table_of(Row)``.
"""

from typing import Final

import sqlalchemy as sa
from sqlmodel import SQLModel

from ._base import table_of
from ._chain import (
    LEDGER_TABLES,
    CheckpointRow,
    EntryRow,
    FieldRowModel,
    RunRow,
    SignedCheckpointRow,
    SpecimenRow,
    StepRow,
    TenantRow,
    TipRow,
    TreeNodeRow,
)
from ._documents import DOCUMENT_TABLES, CertificateRow, ReleaseReportRow
from ._governance import GOVERNANCE_TABLES, AnalystRow, InterventionPolicyRow
from ._grants import GRANT_TABLES, AdmissionRow, WorkerTokenRow
from ._jobs import AUDIT_STATUSES, JOB_KINDS, JOB_STATUSES, JOB_TABLES, AuditRow, JobRow
from ._library import LIBRARY_TABLES, LibraryTagRow
from ._payloads import PAYLOAD_TABLES, InferenceAnswerRow, PayloadChunkRow, PayloadKeyRow

#: The metadata every table above is declared on (SQLModel's own).
METADATA: Final[sa.MetaData] = SQLModel.metadata

#: The names of every table above, in the order the concerns are listed.
TABLES: Final[tuple[str, ...]] = (
    *LEDGER_TABLES,
    *JOB_TABLES,
    *GOVERNANCE_TABLES,
    *GRANT_TABLES,
    *LIBRARY_TABLES,
    *PAYLOAD_TABLES,
    *DOCUMENT_TABLES,
)

__all__ = [
    "AUDIT_STATUSES",
    "DOCUMENT_TABLES",
    "GOVERNANCE_TABLES",
    "GRANT_TABLES",
    "JOB_KINDS",
    "JOB_STATUSES",
    "JOB_TABLES",
    "LEDGER_TABLES",
    "LIBRARY_TABLES",
    "METADATA",
    "PAYLOAD_TABLES",
    "TABLES",
    "AdmissionRow",
    "AnalystRow",
    "AuditRow",
    "CertificateRow",
    "CheckpointRow",
    "EntryRow",
    "FieldRowModel",
    "InferenceAnswerRow",
    "InterventionPolicyRow",
    "JobRow",
    "LibraryTagRow",
    "PayloadChunkRow",
    "PayloadKeyRow",
    "ReleaseReportRow",
    "RunRow",
    "SignedCheckpointRow",
    "SpecimenRow",
    "StepRow",
    "TenantRow",
    "TipRow",
    "TreeNodeRow",
    "WorkerTokenRow",
    "table_of",
]
