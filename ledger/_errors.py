"""One error root for the ledger, branched by who is at fault."""

from __future__ import annotations


class LedgerError(Exception):
    """Root of every error the ledger raises. Messages never carry bound values."""


class LedgerUnavailable(LedgerError):
    """The database could not be reached or refused the operation (infrastructure)."""


class LedgerIntegrityError(LedgerError):
    """The stored chain does not verify; ``index`` is the first bad entry."""

    def __init__(self, message: str, *, index: int | None) -> None:
        super().__init__(message)
        self.index = index


class NotFound(LedgerError):
    """A named record does not exist."""


class Conflict(LedgerError):
    """The write conflicts with what is already recorded (append-only, fencing)."""


class CanonicalizationError(LedgerError, ValueError):
    """A value has no RFC 8785 canonical form (NaN, huge integer, lone surrogate...)."""
