"""Specimen summaries: one SQL text for every way the ledger is read.

A page is read by keyset, never by offset: newest seal first (``sealed_index``
descending, unique and dense in seal order), continuing strictly before the last index
the previous page showed. Every filter is a column (``ledger._facts``), so a page costs
one bounded statement whatever the number of specimens, and rows sealed while a reader
pages land before its first page instead of shifting later ones.

``Ledger.specimen_page`` runs the statement through SQLAlchemy. A command that only
looks at an embedded (SQLite file) ledger runs the same statement through the standard
library's ``sqlite3`` on a read-only connection, so listing specimens does not load the
database layer at all; any other URL gets ``None`` and opens the ledger as usual.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ._errors import LedgerUnavailable
from ._summary_record import Classification, SpecimenSummary

__all__ = [
    "MAX_PAGE",
    "SpecimenFilter",
    "SpecimenPage",
    "count_sql",
    "page_from_rows",
    "page_sql",
    "read_summaries",
    "summary_from_row",
]

MAX_PAGE = 1000

_COLUMNS = """s.id, s.tenant_id, s.agent_name, s.agent_version, s.manifest_digest,
       s.highest_classification, s.sealed_at, s.sealed_index, s.erased, s.legal_hold,
       (SELECT count(*) FROM steps WHERE steps.specimen_id = s.id) AS step_count"""
# counterfactual-admissible now (``ledger._facts``); never NULL, so NOT is its complement
_ADMISSIBLE = (
    "(s.effects_reverifiable AND (s.effects_expire_at IS NULL OR s.effects_expire_at > :now))"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecimenFilter:
    """Which specimens a listing shows. ``admissible`` (True: counterfactual-admissible,
    False: observable-only) is judged at ``now``, which it then requires."""

    tenant_id: str | None = None
    agent_name: str | None = None
    admissible: bool | None = None
    now: datetime | None = None

    def __post_init__(self) -> None:
        if self.admissible is not None and self.now is None:
            raise ValueError("an auditability filter needs the time it is judged at")

    def where(self) -> tuple[list[str], dict[str, Any]]:
        """SQL conditions (fixed text) and their bound values; only the given filters
        appear, so each combination is its own plain, index-friendly statement."""
        conditions: list[str] = []
        params: dict[str, Any] = {}
        if self.tenant_id is not None:
            conditions.append("s.tenant_id = :tenant")
            params["tenant"] = self.tenant_id
        if self.agent_name is not None:
            conditions.append("s.agent_name = :agent")
            params["agent"] = self.agent_name
        if self.admissible is not None:
            assert self.now is not None
            from ._facts import utc_text  # with the record types: only this filter needs it

            conditions.append(_ADMISSIBLE if self.admissible else f"NOT {_ADMISSIBLE}")
            params["now"] = utc_text(self.now)
        return conditions, params


@dataclass(frozen=True, slots=True)
class SpecimenPage:
    """Up to ``limit`` summaries; ``next_before`` continues the listing (None: the end)."""

    items: tuple[SpecimenSummary, ...]
    next_before: int | None


def _check_page(limit: int, before: int | None) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must lie in 1..{MAX_PAGE}")
    if before is not None and (
        isinstance(before, bool) or not isinstance(before, int) or before < 0
    ):
        raise ValueError("before must be a non-negative ledger index")


def page_sql(
    where: SpecimenFilter, *, limit: int, before: int | None
) -> tuple[str, dict[str, Any]]:
    """One page's statement: ``limit + 1`` rows, the extra one only says "there is more"."""
    _check_page(limit, before)
    conditions, params = where.where()
    if before is not None:
        conditions.append("s.sealed_index < :before")
        params["before"] = before
    clause = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    params["limit"] = limit + 1
    # fixed column and condition text only; every value is bound
    sql = (
        f"SELECT {_COLUMNS} FROM specimens AS s {clause} ORDER BY s.sealed_index DESC LIMIT :limit"  # noqa: S608, E501
    )
    return sql, params


def count_sql(where: SpecimenFilter) -> tuple[str, dict[str, Any]]:
    conditions, params = where.where()
    clause = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT count(*) FROM specimens AS s {clause}", params  # noqa: S608 - fixed text


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


def page_from_rows(rows: Sequence[Any], limit: int) -> SpecimenPage:
    shown = rows[:limit]
    more = len(rows) > limit
    return SpecimenPage(
        items=tuple(summary_from_row(row) for row in shown),
        next_before=int(shown[-1]["sealed_index"]) if more else None,
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
    before: int | None = None,
) -> SpecimenPage | None:
    """A page read without the database layer, or None when ``url`` needs it."""
    path = _sqlite_file(url)
    if path is None:
        return None
    sql, params = page_sql(
        SpecimenFilter(tenant_id=tenant_id, agent_name=agent_name), limit=limit, before=before
    )
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        raise LedgerUnavailable("the ledger database cannot be opened") from None
    try:
        conn.row_factory = sqlite3.Row
        return page_from_rows(conn.execute(sql, params).fetchall(), limit)
    except sqlite3.Error:
        raise LedgerUnavailable("the ledger database cannot be read") from None
    finally:
        conn.close()
