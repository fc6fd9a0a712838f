"""A minimal transparency-log witness (C2SP tlog-witness): it follows named logs,
remembers the latest checkpoint it cosigned for each, and cosigns a new one only when a
consistency proof shows it extends that one — so a log that forks its history can have
at most one of its histories cosigned. The protocol is ``ledger.certificates.tlog``'s
``add_checkpoint``; this package keeps the witness's state and serves it over HTTP."""

from ._app import create_witness_app
from ._store import WitnessStore

__all__ = ["WitnessStore", "create_witness_app"]
