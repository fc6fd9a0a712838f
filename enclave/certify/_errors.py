"""Certificate errors: one that does not verify, one whose predicate is malformed."""

from __future__ import annotations

from .._errors import BadInput, IntegrityFailure


class CertificateInvalid(IntegrityFailure):
    """Opaque on purpose: a bad signature, an unknown key, a swapped payload type and a
    malformed envelope all look alike, so the error cannot serve as an oracle. Use
    ``verify_certificate`` for a step-by-step report."""

    code = "certificate_invalid"

    def __init__(self) -> None:
        super().__init__("certificate invalid")


class PredicateInvalid(BadInput):
    """A statement or predicate does not match the certificate schema. The message
    names schema locations and rules only, never the offending values."""

    code = "predicate_invalid"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("certificate predicate invalid: " + "; ".join(problems[:5]))
        self.problems = tuple(problems)
