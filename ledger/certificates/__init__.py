"""The certificate verifier: DSSE (Ed25519) envelopes around in-toto Statement v1, the
predicate schemas and rules, and the statistics the rules re-derive.

Plaintext-free and importable without the enclave: this is what the analyst's side and
an independent reviewer use. Certificates are predicate type v3; v1 and v2 certificates
are still verified (``docs/certificate-v3.md``). Sign with
``sign_statement(build_statement(...), signer)`` (or a ``CertificateSigner``, such
as ``LocalSigner``); verify offline with
``verify_envelope`` or fully (ledger included) with ``verify_certificate``, whose
numbered steps are listed in ``ledger/certificates/_verify.py``; a bundle (the envelope
with C2SP proofs of its ledger entries) with ``verify_bundle``, no ledger at hand.
"""

from typing import TYPE_CHECKING

from ..lazy import deferred
from ._errors import BadCertificateInput, CertificateError, CertificateInvalid, PredicateInvalid

if TYPE_CHECKING:  # deferred: cryptography and jsonschema cost a command's start-up
    from ._bundle import (
        BUNDLE_MEDIA_TYPE,
        ProvenEntry,
        is_bundle,
        make_bundle,
        proven_entry,
        verify_bundle,
    )
    from ._checks import BUNDLE_CHECK_NAMES, CHECK_NAMES, VerificationCheck, VerificationReport
    from ._dsse import IN_TOTO_PAYLOAD_TYPE, DsseSignature, Envelope, pae, sign_dsse, verify_dsse
    from ._finding import envelope_finding, failed_finding, finding
    from ._keys import Signer, keyid_of, load_public_key_pem
    from ._report_shape import (
        REPORT_BITS_PER_SPECIMEN,
        REPORT_LABELS,
        REPORT_REASONS,
        REPORT_SUBJECT,
        REPORT_TYPE,
        REPORT_TYPE_V1,
        report_disclosure,
        report_problems,
        report_row_holds,
        report_selection_digest,
        report_shape_problems,
    )
    from ._report_verify import (
        REPORT_BUNDLE_CHECK_NAMES,
        REPORT_BUNDLE_MEDIA_TYPE,
        ReportCheck,
        is_report_bundle,
        make_report_bundle,
        report_checks,
        report_layers_changed,
        report_outcome,
        verify_report_bundle,
    )
    from ._schema import PREDICATE_SCHEMA_V1
    from ._schema_v3 import COARSE, PREDICATE_SCHEMA, PREDICATE_SCHEMA_V2
    from ._schemas import is_valid, schema_is_valid, validation_errors
    from ._signing import CertificateSigner, LocalSigner
    from ._statement import (
        STATEMENT_TYPE,
        build_statement,
        envelope_digest,
        sign_statement,
        statement_problems,
    )
    from ._tight import coarse, tight_predicate
    from ._verify import LedgerLookup, StaticLedgerLookup, verify_certificate, verify_envelope
    from ._versions import PREDICATE_TYPE, PREDICATE_TYPE_V1, PREDICATE_TYPE_V2, predicate_problems
    from ._vocabulary import AuditabilityClass, AuditabilityReason, AuditLabel

__getattr__ = deferred(
    __name__,
    globals(),
    {
        "envelope_finding": "._finding",
        "REPORT_BITS_PER_SPECIMEN": "._report_shape",
        "REPORT_LABELS": "._report_shape",
        "REPORT_REASONS": "._report_shape",
        "REPORT_SUBJECT": "._report_shape",
        "REPORT_TYPE": "._report_shape",
        "REPORT_TYPE_V1": "._report_shape",
        "report_disclosure": "._report_shape",
        "report_problems": "._report_shape",
        "report_row_holds": "._report_shape",
        "REPORT_BUNDLE_CHECK_NAMES": "._report_verify",
        "REPORT_BUNDLE_MEDIA_TYPE": "._report_verify",
        "ReportCheck": "._report_verify",
        "is_report_bundle": "._report_verify",
        "make_report_bundle": "._report_verify",
        "report_checks": "._report_verify",
        "report_layers_changed": "._report_verify",
        "report_outcome": "._report_verify",
        "verify_report_bundle": "._report_verify",
        "report_selection_digest": "._report_shape",
        "report_shape_problems": "._report_shape",
        "failed_finding": "._finding",
        "finding": "._finding",
        "IN_TOTO_PAYLOAD_TYPE": "._dsse",
        "DsseSignature": "._dsse",
        "Envelope": "._dsse",
        "pae": "._dsse",
        "sign_dsse": "._dsse",
        "verify_dsse": "._dsse",
        "Signer": "._keys",
        "keyid_of": "._keys",
        "load_public_key_pem": "._keys",
        "PREDICATE_SCHEMA_V1": "._schema",
        "PREDICATE_SCHEMA": "._schema_v3",
        "COARSE": "._schema_v3",
        "PREDICATE_SCHEMA_V2": "._schema_v3",
        "is_valid": "._schemas",
        "schema_is_valid": "._schemas",
        "validation_errors": "._schemas",
        "CertificateSigner": "._signing",
        "LocalSigner": "._signing",
        "STATEMENT_TYPE": "._statement",
        "build_statement": "._statement",
        "envelope_digest": "._statement",
        "sign_statement": "._statement",
        "statement_problems": "._statement",
        "CHECK_NAMES": "._checks",
        "BUNDLE_CHECK_NAMES": "._checks",
        "BUNDLE_MEDIA_TYPE": "._bundle",
        "ProvenEntry": "._bundle",
        "is_bundle": "._bundle",
        "make_bundle": "._bundle",
        "proven_entry": "._bundle",
        "verify_bundle": "._bundle",
        "coarse": "._tight",
        "tight_predicate": "._tight",
        "LedgerLookup": "._verify",
        "StaticLedgerLookup": "._verify",
        "VerificationCheck": "._checks",
        "VerificationReport": "._checks",
        "verify_certificate": "._verify",
        "verify_envelope": "._verify",
        "PREDICATE_TYPE": "._versions",
        "PREDICATE_TYPE_V1": "._versions",
        "PREDICATE_TYPE_V2": "._versions",
        "predicate_problems": "._versions",
        "AuditLabel": "._vocabulary",
        "AuditabilityClass": "._vocabulary",
        "AuditabilityReason": "._vocabulary",
    },
)

__all__ = [
    "BUNDLE_CHECK_NAMES",
    "BUNDLE_MEDIA_TYPE",
    "CHECK_NAMES",
    "COARSE",
    "IN_TOTO_PAYLOAD_TYPE",
    "PREDICATE_SCHEMA",
    "PREDICATE_SCHEMA_V1",
    "PREDICATE_SCHEMA_V2",
    "PREDICATE_TYPE",
    "PREDICATE_TYPE_V1",
    "PREDICATE_TYPE_V2",
    "REPORT_BITS_PER_SPECIMEN",
    "REPORT_BUNDLE_CHECK_NAMES",
    "REPORT_BUNDLE_MEDIA_TYPE",
    "REPORT_LABELS",
    "REPORT_REASONS",
    "REPORT_SUBJECT",
    "REPORT_TYPE",
    "REPORT_TYPE_V1",
    "STATEMENT_TYPE",
    "AuditLabel",
    "AuditabilityClass",
    "AuditabilityReason",
    "BadCertificateInput",
    "CertificateError",
    "CertificateSigner",
    "CertificateInvalid",
    "DsseSignature",
    "Envelope",
    "LedgerLookup",
    "LocalSigner",
    "PredicateInvalid",
    "ProvenEntry",
    "ReportCheck",
    "Signer",
    "StaticLedgerLookup",
    "VerificationCheck",
    "VerificationReport",
    "build_statement",
    "coarse",
    "envelope_digest",
    "envelope_finding",
    "failed_finding",
    "finding",
    "is_bundle",
    "is_report_bundle",
    "is_valid",
    "keyid_of",
    "load_public_key_pem",
    "make_bundle",
    "make_report_bundle",
    "pae",
    "predicate_problems",
    "proven_entry",
    "report_checks",
    "report_disclosure",
    "report_layers_changed",
    "report_outcome",
    "report_problems",
    "report_row_holds",
    "report_selection_digest",
    "report_shape_problems",
    "schema_is_valid",
    "sign_dsse",
    "sign_statement",
    "statement_problems",
    "tight_predicate",
    "validation_errors",
    "verify_bundle",
    "verify_certificate",
    "verify_dsse",
    "verify_envelope",
    "verify_report_bundle",
]
