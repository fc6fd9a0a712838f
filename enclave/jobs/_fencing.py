"""Ledger appends that obey the job lease.

A job's stages append to the ledger themselves (``grant.used``, ``certificate.issued``,
``audit.failed``). Fencing the job's final commit is not enough: a worker paused past
its lease would still append its certificate when it resumes. So a job runs with a
``FencedLedger``: every append happens in one write transaction that first checks the
job's fencing token (lock order: audit row, job row, ledger tip — as in ``_queue``).

Conclusions are recorded at most once (``_conclusions``).
"""

from __future__ import annotations

import sqlalchemy as sa

from ledger import Ledger, LedgerPosition
from ledger.transactions import caller_items, guarded, write

from ._conclusions import Items, append_in, ledger_clock, save_positions
from ._queue import lock_job

__all__ = ["FencedLedger", "TxLedger"]


class FencedLedger(Ledger):
    """The ledger as seen by one leased job: appends commit only with its current token."""

    def __init__(self, base: Ledger, *, job_id: str, fencing_token: int) -> None:
        super().__init__(engine=base.engine, head_path=base.head_path, clock=ledger_clock(base))
        self._job_id = job_id
        self._token = fencing_token

    @guarded("append")
    def append_many(self, items: Items) -> list[LedgerPosition]:
        items = caller_items(items)
        if not items:
            return []
        with write(self.engine) as conn:
            lock_job(conn, self._job_id, self._token)
            positions = append_in(conn, items, clock=self._clock)
        save_positions(self, positions)
        return positions


class TxLedger(Ledger):
    """The ledger inside a transaction someone else holds: appends commit with it.

    ``appended`` collects the positions; pass them to ``save_positions`` after commit.
    """

    def __init__(self, base: Ledger, conn: sa.Connection) -> None:
        super().__init__(engine=base.engine, head_path=base.head_path, clock=ledger_clock(base))
        self._conn = conn
        self.appended: list[LedgerPosition] = []

    def append_many(self, items: Items) -> list[LedgerPosition]:
        positions = append_in(self._conn, items, clock=self._clock)
        self.appended.extend(positions)
        return positions
