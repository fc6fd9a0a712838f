"""Specimen summaries: one SQL statement for every way the ledger is read.

``Ledger.list_specimens`` runs it through SQLAlchemy. A command that only looks at an
embedded (SQLite file) ledger runs the same statement through the standard library's
``sqlite3`` on a read-only connection, so listing specimens does not load the database
layer at all; any other URL gets ``None`` and opens the ledger as usual.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ._errors import LedgerUnavailable
from ._records import Classification, SpecimenSummary

__all__ = ["SUMMARIES_SQL", "read_summaries", "summary_params", "summary_from_row"]

# Named parameters (``:name``) read the same in SQLAlchemy's text() and in sqlite3.
SUMMARIES_SQL = """
SELECT s.id, s.tenant_id, s.agent_name, s.agent_version, s.manifest_digest,
       s.highest_classification, s.sealed_at, s.erased, s.legal_hold,
       (SELECT count(*) FROM steps WHERE steps.specimen_id = s.id) AS step_count
FROM specimens AS s
WHERE (CAST(:tenant AS TEXT) IS NULL OR s.tenant_id = :tenant)
  AND (CAST(:agent AS TEXT) IS NULL OR s.agent_name = :agent)
ORDER BY s.sealed_index DESC
LIMIT :limit OFFSET :offset
"""


def summary_params(
    *, tenant_id: str | None, agent_name: str | None, limit: int, offset: int
) -> dict[str, Any]:
    if limit < 0 or offset < 0:
        raise ValueError("limit and offset must be non-negative")
    return {"tenant": tenant_id, "agent": agent_name, "limit": limit, "offset": offset}


def summary_from_row(row: Any) -> SpecimenSummary:
    """One summary from a result row (a SQLAlchemy mapping or an sqlite3.Row)."""
    return SpecimenSummary(
        specimen_id=row["id"],
        tenant_id=row["tenant_id"],
        agent_name=row["agent_name"],
        agent_version=row["agent_version"],
        manifest_digest=row["manifest_digest"],
        highest_classification=Classification(row["highest_classification"]),
        sealed_at=row["sealed_at"],
        step_count=int(row["step_count"]),
        erased=bool(row["erased"]),
        legal_hold=bool(row["legal_hold"]),
    )


def _sqlite_file(url: str) -> Path | None:
    """The file behind a plain ``sqlite:///PATH`` URL; None for anything else."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or url == prefix:
        return None
    return Path(url[len(prefix) :])


def read_summaries(
    url: str,
    *,
    tenant_id: str | None = None,
    agent_name: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[SpecimenSummary] | None:
    """Summaries read without the database layer, or None when ``url`` needs it."""
    path = _sqlite_file(url)
    if path is None:
        return None
    params = summary_params(tenant_id=tenant_id, agent_name=agent_name, limit=limit, offset=offset)
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        raise LedgerUnavailable("the ledger database cannot be opened") from None
    try:
        conn.row_factory = sqlite3.Row
        return [summary_from_row(row) for row in conn.execute(SUMMARIES_SQL, params)]
    except sqlite3.Error:
        raise LedgerUnavailable("the ledger database cannot be read") from None
    finally:
        conn.close()
