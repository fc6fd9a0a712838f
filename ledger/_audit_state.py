"""The closed vocabulary of an audit's state: one spelling for every layer that names it.

An audit moves ``QUEUED`` -> ``RUNNING`` -> ``FINALIZING`` -> one of ``COMPLETED``,
``FAILED``, ``CANCELLED`` (it may skip ahead; it never leaves a terminal state). The
jobs tables' CHECK constraint, the jobs code and the service's response model derive
their lists from here; ``tests/unit/ledger/test_audit_state.py`` holds the copies that cannot import
it (the Alembic revision, the notebook client, the TypeScript client) to the same set.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ACTIVE_AUDIT_STATES", "TERMINAL_AUDIT_STATES", "AuditState"]


class AuditState(StrEnum):
    # declaration order is lifecycle order (the CHECK constraint lists them this way)
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    FINALIZING = "FINALIZING"
    COMPLETED = "COMPLETED"  # with its certificate
    FAILED = "FAILED"  # with a safe failure code only
    CANCELLED = "CANCELLED"


# work may still be done for these; a worker is handed nothing for any other
ACTIVE_AUDIT_STATES = frozenset({AuditState.QUEUED, AuditState.RUNNING, AuditState.FINALIZING})
# concluded once and for all: no later transition
TERMINAL_AUDIT_STATES = frozenset({AuditState.COMPLETED, AuditState.FAILED, AuditState.CANCELLED})
