"""One error root for the enclave, branched by who is at fault.

Messages are written for the person who must act and never carry payload content:
no values, no request bodies, no reasons that could serve as a decryption oracle.
"""

from __future__ import annotations


class EnclaveError(Exception):
    """Root of every error the enclave raises on purpose."""

    code = "enclave_error"


class BadInput(EnclaveError):
    """Untrusted input (a file, a request, an option) is malformed or unknown."""

    code = "bad_input"


class Refused(EnclaveError):
    """Policy or eligibility says no. ``code`` names the unmet condition."""

    code = "refused"

    def __init__(self, message: str, *, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code


class InfrastructureError(EnclaveError):
    """A dependency (ledger, key server, filesystem) failed; safe to retry later."""

    code = "infrastructure"


class DecryptionFailed(EnclaveError):
    """Opaque on purpose: wrong key, moved ciphertext, flipped byte all look alike."""

    code = "decryption_failed"

    def __init__(self) -> None:
        super().__init__("decryption failed")


class GrantRefused(EnclaveError):
    """A key grant was expired, reused, revoked or for another specimen (opaque)."""

    code = "grant_refused"

    def __init__(self) -> None:
        super().__init__("key grant refused")
