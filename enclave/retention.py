"""Retention, for an operator or a scheduler that runs it from Python: the retention
classes a home's ``config.toml`` declares (``RetentionPolicy``, ``parse_period``), which
class a specimen falls under (``effective_retention_of``: ``library`` while it is
tagged), retiring a specimen from the library, and the sweep that erases what has
expired (``sweep`` pages through the ledger ``PAGE`` specimens at a time and stops with
``SweepStopped`` on a failure). ``replay-enclave retention`` and the service call the
same functions; the invariants are in the sweep's own module.
"""

from ._retention import (
    LIBRARY,
    PAGE,
    RetentionPolicy,
    SweepResult,
    SweepStopped,
    effective_retention,
    effective_retention_of,
    parse_period,
    retire_specimen,
    sweep,
)

__all__ = [
    "LIBRARY",
    "PAGE",
    "RetentionPolicy",
    "SweepResult",
    "SweepStopped",
    "effective_retention",
    "effective_retention_of",
    "parse_period",
    "retire_specimen",
    "sweep",
]
