"""One error root for the ledger, branched by who is at fault."""

from __future__ import annotations

from typing import NoReturn


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


class MalformedDocument(LedgerError):
    """A certificate or release report is not an envelope around a statement."""


class CanonicalizationError(LedgerError, ValueError):
    """A value has no RFC 8785 canonical form (NaN, huge integer, lone surrogate...)."""


def raise_unchained(error: BaseException) -> NoReturn:
    """Raise ``error`` referring to no other exception.

    Raised while another is being handled (in an ``except`` block, or a context
    manager's exit), it would keep that one as ``__context__``, ``from None``
    included, which only hides it from the printed traceback. The handled one can hold
    what an error must never carry: a driver's bound values, a decoder's whole input
    (``JSONDecodeError.doc``), an encoder's string (``UnicodeEncodeError.object``), an
    agent's message. A bare re-raise does not chain, so the links are cleared in between.
    """
    try:
        raise error
    except BaseException:
        error.__cause__ = None
        error.__context__ = None
        error.__suppress_context__ = True
        raise
