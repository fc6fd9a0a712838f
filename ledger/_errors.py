"""One error root for the ledger, branched by who is at fault.

Every error class also says what it means to the outside (``ErrorOutcome``): the exit
code a command ends with and the HTTP status the service answers. The CLI and the
service read these instead of keeping ladders of their own that could disagree.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

# what an exception no class speaks for becomes: an internal fault
INTERNAL_EXIT_CODE = 70
INTERNAL_HTTP_STATUS = 500


class ErrorOutcome:
    """Mixin of every error root: the outcome an error of this class stands for.

    ``exit_code``: 2 bad input or a refusal, 3 infrastructure trouble, 70 an internal
    fault (the README's table). ``http_status``: the service's answer. ``public_text``:
    what the service says instead of the error's own text, for errors whose text is
    meant for an operator (``None``: the text itself is written to be shown).
    ``retryable``: whether a job that failed with this error may be tried again (a
    dependency's trouble that may pass: the database, the key server, the sandbox);
    bad input, refusals, integrity and agent failures end the job. The ledger's
    branches keep their root's answer: a job has always been retried on any ledger
    error but the certificate verifier's.
    """

    exit_code: int = INTERNAL_EXIT_CODE
    http_status: int = INTERNAL_HTTP_STATUS
    retryable: bool = False
    public_text: ClassVar[str | None] = None

    def http_headers(self) -> dict[str, str] | None:
        """Headers the service's answer carries besides the body (e.g. Retry-After)."""
        return None


def exit_code_for(exc: BaseException) -> int:
    """The exit code a command ends with when ``exc`` reaches the command line's edge.

    Read from the error itself, so an error that stands for another's outcome (a stopped
    sweep for its cause) can say so on the instance."""
    return exc.exit_code if isinstance(exc, ErrorOutcome) else INTERNAL_EXIT_CODE


def http_status_for(exc: BaseException) -> int:
    """The HTTP status the service answers when ``exc`` reaches its edge."""
    return exc.http_status if isinstance(exc, ErrorOutcome) else INTERNAL_HTTP_STATUS


class LedgerError(ErrorOutcome, Exception):
    """Root of every error the ledger raises. Messages never carry bound values."""

    exit_code = 3
    http_status = 503
    retryable = True
    code: ClassVar[str] = "ledger_unavailable"
    public_text: ClassVar[str | None] = "the ledger is unavailable; retry later"


class LedgerUnavailable(LedgerError):
    """The database could not be reached or refused the operation (infrastructure)."""


class LedgerIntegrityError(LedgerError):
    """The stored chain does not verify; ``index`` is the first bad entry."""

    def __init__(self, message: str, *, index: int | None) -> None:
        super().__init__(message)
        self.index = index


class NotFound(LedgerError):
    """A named record does not exist (the caller named it: bad input)."""

    exit_code = 2
    http_status = 404
    code = "not_found"
    public_text = "no such resource"


class Conflict(LedgerError):
    """The write conflicts with what is already recorded (append-only, fencing)."""

    exit_code = 2
    http_status = 409
    code = "conflict"
    public_text = "the request conflicts with the recorded state"


class MalformedDocument(LedgerError):
    """A certificate or release report is not an envelope around a statement."""


class CanonicalizationError(LedgerError, ValueError):
    """A value has no RFC 8785 canonical form (NaN, huge integer, lone surrogate...)."""

    exit_code = 2
    http_status = 400
    code = "not_canonical"
    public_text = "a value has no canonical JSON form"


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
