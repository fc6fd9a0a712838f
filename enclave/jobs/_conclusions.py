"""An audit's conclusion is recorded in the ledger at most once.

A conclusion is ``certificate.issued``, ``audit.failed`` or ``audit.cancelled``.
Appending a conclusion identical to the recorded one (same kind, same canonical body:
a re-delivered finalizer signs the same statement, Ed25519 being deterministic)
returns the recorded position instead of a second entry; any other conclusion is a
``Conflict``. ``record_failure`` is the lenient form used when a job is given up: it
adds ``audit.failed`` only if nothing is recorded yet.

These helpers append inside a write transaction the caller holds (after it locked
the audit and job rows: the ledger tip is always locked last).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from ledger import Conflict, Ledger, LedgerPosition, canonical_json
from ledger.tables import EntryRow, table_of
from ledger.transactions import append_rows, caller_items, lock_tip, save_head

__all__ = [
    "CONCLUSION_KINDS",
    "Items",
    "append_in",
    "ledger_clock",
    "record_failure",
    "save_positions",
]

CONCLUSION_KINDS = ("certificate.issued", "audit.failed", "audit.cancelled")

_entries = table_of(EntryRow)
Items = Sequence[tuple[str, str, Mapping[str, Any]]]


def ledger_clock(ledger: Ledger) -> Callable[[], str]:
    clock: Callable[[], str] = ledger._clock  # noqa: SLF001 - the same clock as the ledger's own appends
    return clock


def _recorded_conclusion(conn: sa.Connection, items: Items) -> LedgerPosition | None:
    """The position to reuse if ``items`` repeats the recorded conclusion; else ``None``.

    Raises ``Conflict`` when ``items`` would add a second, different conclusion.
    """
    for kind, subject, body in items:
        if kind not in CONCLUSION_KINDS:
            continue
        rows = conn.execute(
            sa.select(
                _entries.c.entry_index,
                _entries.c.entry_hash,
                _entries.c.kind,
                _entries.c.body_json,
            )
            .where(_entries.c.subject == subject, _entries.c.kind.in_(CONCLUSION_KINDS))
            .order_by(_entries.c.entry_index)
        ).all()
        if not rows:
            continue
        first = rows[0]
        same = first[2] == kind and first[3] == canonical_json(dict(body)).decode()
        if same and len(items) == 1:
            return LedgerPosition(index=int(first[0]), entry_hash=str(first[1]))
        raise Conflict("the audit's conclusion is already recorded")
    return None


def append_in(
    conn: sa.Connection, items: Items, *, clock: Callable[[], str]
) -> list[LedgerPosition]:
    """Append inside the caller's write transaction (conclusions at most once)."""
    items = caller_items(items)
    if not items:
        return []
    reused = _recorded_conclusion(conn, items)
    if reused is not None:
        return [reused]
    tip = lock_tip(conn)
    positions, _ = append_rows(conn, tip, items, clock())
    return positions


def record_failure(
    conn: sa.Connection, audit_id: str, reason: str, *, clock: Callable[[], str]
) -> list[LedgerPosition]:
    """Append ``audit.failed`` unless the audit's conclusion is already recorded."""
    recorded = conn.execute(
        sa.select(sa.literal(1)).where(
            _entries.c.subject == audit_id, _entries.c.kind.in_(CONCLUSION_KINDS)
        )
    ).first()
    if recorded is not None:
        return []
    body = {"audit_id": audit_id, "reason": reason}
    return append_in(conn, [("audit.failed", audit_id, body)], clock=clock)


def save_positions(ledger: Ledger, positions: Sequence[LedgerPosition]) -> None:
    """After the commit: remember the newest head (as the ledger does after its appends)."""
    if positions and ledger.head_path is not None:
        save_head(ledger.head_path, max(positions, key=lambda p: p.index))
