"""A ledger that holds what a statement claims: its specimen's seal at the position the
predicate names and, when given, the envelope's ``certificate.issued`` entry (for
verifying golden and hand-signed certificates with no database)."""

from __future__ import annotations

from typing import Any

from ledger.certificates import StaticLedgerLookup, envelope_digest

__all__ = ["lookup_of"]


def lookup_of(statement: dict[str, Any], envelope: dict[str, Any] | None) -> StaticLedgerLookup:
    specimen_id = statement["subject"][0]["name"].removeprefix("specimen:")
    ledger = statement["predicate"]["ledger"]
    certificates = (
        {} if envelope is None else {envelope_digest(envelope): (9, "sha256:" + "e" * 64)}
    )
    return StaticLedgerLookup(
        specimens={
            specimen_id: (
                "sha256:" + statement["subject"][0]["digest"]["sha256"],
                ledger["specimen_entry_index"],
                ledger["specimen_entry_hash"],
            )
        },
        certificates=certificates,
    )
