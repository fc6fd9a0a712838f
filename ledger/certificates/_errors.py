"""The verifier's errors: one root under the ledger's, branched by who is at fault.

The enclave maps them to the outcomes they had when they were enclave errors:
``BadCertificateInput`` and ``PredicateInvalid`` are bad input (exit 2, HTTP 400),
``CertificateInvalid`` is neither input nor infrastructure (exit 70, HTTP 503).
"""

from __future__ import annotations

from .._errors import LedgerError

__all__ = ["BadCertificateInput", "CertificateError", "CertificateInvalid", "PredicateInvalid"]


class CertificateError(LedgerError):
    """Root of every error the certificate verifier raises on purpose."""

    code = "certificate_error"


class BadCertificateInput(CertificateError):
    """An envelope or a public key given to the verifier is malformed (untrusted input)."""

    code = "bad_input"


class CertificateInvalid(CertificateError):
    """Opaque on purpose: a bad signature, an unknown key, a swapped payload type and a
    malformed envelope all look alike, so the error cannot serve as an oracle. Use
    ``verify_certificate`` for a step-by-step report."""

    code = "certificate_invalid"

    def __init__(self) -> None:
        super().__init__("certificate invalid")


class PredicateInvalid(BadCertificateInput):
    """A statement or predicate does not match the certificate schema. The message
    names schema locations and rules only, never the offending values."""

    code = "predicate_invalid"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("certificate predicate invalid: " + "; ".join(problems[:5]))
        self.problems = tuple(problems)
