"""Signed certificates: DSSE (Ed25519) envelopes around in-toto Statement v1.

Certificates are predicate type v2; v1 certificates are still verified
(``docs/certificate-v2.md``). Sign with ``sign_statement(build_statement(...), key)``;
verify offline with ``verify_envelope`` or fully (ledger included) with
``verify_certificate``, whose numbered steps are listed in ``enclave/certify/_verify.py``.
"""

from ._dsse import IN_TOTO_PAYLOAD_TYPE, DsseSignature, Envelope, pae, sign_dsse, verify_dsse
from ._errors import CertificateInvalid, PredicateInvalid
from ._schema import PREDICATE_SCHEMA_V1
from ._schema_v2 import PREDICATE_SCHEMA
from ._signing import SigningKey, keyid_of, load_public_key_pem
from ._statement import (
    STATEMENT_TYPE,
    build_statement,
    envelope_digest,
    sign_statement,
    statement_problems,
)
from ._verify import (
    CHECK_NAMES,
    LedgerLookup,
    StaticLedgerLookup,
    VerificationCheck,
    VerificationReport,
    verify_certificate,
    verify_envelope,
)
from ._versions import PREDICATE_TYPE, PREDICATE_TYPE_V1, predicate_problems

__all__ = [
    "CHECK_NAMES",
    "IN_TOTO_PAYLOAD_TYPE",
    "PREDICATE_SCHEMA",
    "PREDICATE_SCHEMA_V1",
    "PREDICATE_TYPE",
    "PREDICATE_TYPE_V1",
    "STATEMENT_TYPE",
    "CertificateInvalid",
    "DsseSignature",
    "Envelope",
    "LedgerLookup",
    "PredicateInvalid",
    "SigningKey",
    "StaticLedgerLookup",
    "VerificationCheck",
    "VerificationReport",
    "build_statement",
    "envelope_digest",
    "keyid_of",
    "load_public_key_pem",
    "pae",
    "predicate_problems",
    "sign_dsse",
    "sign_statement",
    "statement_problems",
    "verify_certificate",
    "verify_dsse",
    "verify_envelope",
]
