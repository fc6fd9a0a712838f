"""One error root for the enclave, branched by who is at fault.

Messages are written for the person who must act and never carry payload content:
no values, no request bodies, no reasons that could serve as a decryption oracle.

Each branch carries its outcome (``ledger.ErrorOutcome``): the exit code a command
ends with and the HTTP status the service answers.

* ``BadInput``            — untrusted input is malformed or unknown (2, 400)
* ``Refused``             — policy or eligibility says no (2, 403)
* ``InfrastructureError`` — a dependency failed; safe to retry (3, 503)
* ``IntegrityFailure``    — a payload, record or certificate does not verify (1, 503)
* ``AgentFailed``         — the agent under capture or audit failed (4, 503)

The root itself is only raised by agent code: a fault with no branch (70, 503).
"""

from __future__ import annotations

from typing import ClassVar

from ledger import ErrorOutcome


class EnclaveError(ErrorOutcome, Exception):
    """Root of every error the enclave raises on purpose."""

    code = "enclave_error"
    exit_code = 70
    http_status = 503
    retryable = False
    public_text: ClassVar[str | None] = "the enclave could not complete the request"


class BadInput(EnclaveError):
    """Untrusted input (a file, a request, an option) is malformed or unknown."""

    code = "bad_input"
    exit_code = 2
    http_status = 400
    public_text = None


class Refused(EnclaveError):
    """Policy or eligibility says no. ``code`` names the unmet condition."""

    code = "refused"
    exit_code = 2
    http_status = 403
    public_text = None

    def __init__(self, message: str, *, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code


class InfrastructureError(EnclaveError):
    """A dependency (ledger, key server, filesystem) failed; safe to retry later."""

    code = "infrastructure"
    exit_code = 3
    http_status = 503
    retryable = True
    public_text = "a dependency is unavailable; retry later"


class IntegrityFailure(EnclaveError):
    """A payload, record or certificate does not verify (tampered, moved, cut short,
    or no key to open it). Retrying does not help; the text names no reason."""

    code = "integrity_failure"
    exit_code = 1
    http_status = 503


class AgentFailed(EnclaveError):
    """The agent under capture or audit failed: it crashed, went live, diverged from
    its record or sent back a reply the supervisor refuses. Not the enclave's fault."""

    code = "agent_failed"
    exit_code = 4
    http_status = 503


class DecryptionFailed(IntegrityFailure):
    """Opaque on purpose: wrong key, moved ciphertext, flipped byte all look alike."""

    code = "decryption_failed"

    def __init__(self) -> None:
        super().__init__("decryption failed")


class GrantRefused(Refused):
    """A key grant was expired, reused, revoked or for another specimen (opaque)."""

    code = "grant_refused"

    def __init__(self) -> None:
        super().__init__("key grant refused", code="grant_refused")
