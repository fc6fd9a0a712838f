"""The verifier's errors: one root under the ledger's, branched by who is at fault.

Each states its outcome (``ledger.ErrorOutcome``) as the enclave's errors do:
``BadCertificateInput`` and ``PredicateInvalid`` are bad input (exit 2, HTTP 400),
``CertificateInvalid`` is an integrity failure (exit 1, HTTP 503, an opaque answer).
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import LedgerError

__all__ = ["BadCertificateInput", "CertificateError", "CertificateInvalid", "PredicateInvalid"]


class CertificateError(LedgerError):
    """Root of every error the certificate verifier raises on purpose."""

    code = "certificate_error"
    exit_code = 70
    http_status = 503
    retryable = False  # a certificate that cannot be built or checked stays so
    public_text: ClassVar[str | None] = "the certificate could not be checked"


class BadCertificateInput(CertificateError):
    """An envelope or a public key given to the verifier is malformed (untrusted input)."""

    code = "bad_input"
    exit_code = 2
    http_status = 400
    public_text = None


class CertificateInvalid(CertificateError):
    """Opaque on purpose: a bad signature, an unknown key, a swapped payload type and a
    malformed envelope all look alike, so the error cannot serve as an oracle. Use
    ``verify_certificate`` for a step-by-step report."""

    code = "certificate_invalid"
    exit_code = 1  # as the enclave's integrity failures: retrying does not help
    http_status = 503
    public_text = "the enclave could not complete the request"

    def __init__(self) -> None:
        super().__init__("certificate invalid")


class PredicateInvalid(BadCertificateInput):
    """A statement or predicate does not match the certificate schema. The message
    names schema locations and rules only, never the offending values."""

    code = "predicate_invalid"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("certificate predicate invalid: " + "; ".join(problems[:5]))
        self.problems = tuple(problems)
