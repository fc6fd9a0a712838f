"""Each package's public front: the names it promises, and that every one resolves
(several are imported on first use, so a typo would only show at run time)."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "enclave",
    "ledger",
    "ledger.certificates",
    "ledger.lazy",
    "ledger.certificates.statistics",
    "enclave.capture",
    "enclave.governance",
    "enclave.jobs",
    "enclave.keys",
    "enclave.replay",
    "enclave.sandbox",
    "enclave.service",
    "enclave.store",
    "enclave.vaultops",
    "jupyter_ext",
]

PINNED = {
    "ledger": {
        "ACTIVE_AUDIT_STATES",
        "AdapterInfo",
        "AuditState",
        "CanonicalizationError",
        "Classification",
        "Conflict",
        "EffectInfo",
        "EntryRecord",
        "ErrorOutcome",
        "FieldRecord",
        "GENESIS_HASH",
        "Ledger",
        "LedgerError",
        "LedgerIntegrityError",
        "LedgerPosition",
        "LedgerUnavailable",
        "MAX_SAFE_INTEGER",
        "MalformedDocument",
        "NotFound",
        "REPORT_ID",
        "ReportPage",
        "Retention",
        "RunStatus",
        "SpecimenFilter",
        "SpecimenPage",
        "SpecimenRecord",
        "SpecimenSummary",
        "StepKind",
        "StepRecord",
        "StoredCertificate",
        "StoredReport",
        "TERMINAL_AUDIT_STATES",
        "VerifyReport",
        "canonical_digest",
        "canonical_json",
        "certificates_by_digest",
        "exit_code_for",
        "hash_envelope",
        "http_status_for",
        "list_certificates",
        "list_reports",
        "loads",
        "make_engine",
        "raise_unchained",
        "read_saved_head",
        "read_summaries",
        "report_id_of",
        "report_page",
        "store_certificate",
        "store_report",
        "stored_certificate",
        "stored_report",
        "utc_clock",
    },
    "ledger.certificates": {
        "AuditLabel",
        "AuditabilityClass",
        "AuditabilityReason",
        "BadCertificateInput",
        "CHECK_NAMES",
        "CertificateError",
        "CertificateInvalid",
        "CertificateSigner",
        "DsseSignature",
        "Envelope",
        "IN_TOTO_PAYLOAD_TYPE",
        "LedgerLookup",
        "LocalSigner",
        "PREDICATE_SCHEMA",
        "PREDICATE_SCHEMA_V1",
        "PREDICATE_TYPE",
        "PREDICATE_TYPE_V1",
        "PredicateInvalid",
        "STATEMENT_TYPE",
        "Signer",
        "StaticLedgerLookup",
        "VerificationCheck",
        "VerificationReport",
        "build_statement",
        "envelope_digest",
        "is_valid",
        "keyid_of",
        "load_public_key_pem",
        "pae",
        "predicate_problems",
        "schema_is_valid",
        "sign_dsse",
        "sign_statement",
        "statement_problems",
        "validation_errors",
        "verify_certificate",
        "verify_dsse",
        "verify_envelope",
    },
    "ledger.lazy": {"deferred"},
    "enclave.keys": {
        "DigestKeys",
        "DigestSource",
        "Grant",
        "KeyProvider",
        "LocalGrant",
        "LocalKeyProvider",
        "SigningKey",
        "TenantDigester",
        "TransitGrant",
        "TransitKeyProvider",
        "VaultSession",
        "VaultSettings",
        "WrappedKey",
        "derivation_context",
    },
    "enclave.capture": {
        "ENTRY_POINT_GROUP",
        "AgentCrashed",
        "AgentSpec",
        "Answer",
        "BoundarySpec",
        "CaptureResult",
        "Context",
        "FieldPolicy",
        "LiveCall",
        "Recorder",
        "RevisionPoint",
        "SpecError",
        "Substitute",
        "available_agents",
        "build_manifest",
        "capture",
        "load_agent",
        "recorded_reference",
        "policy",
        "source_ref",
    },
    "enclave.sandbox": {
        "REASONS",
        "Contaminated",
        "Sandbox",
        "SandboxLimits",
        "SandboxUnavailable",
        "WorkerClosed",
        "WorkerHandle",
        "Zygotes",
    },
}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)), "duplicate names in __all__"
    for name in names:
        assert getattr(module, name) is not None, name


@pytest.mark.parametrize("package", sorted(PINNED))
def test_public_names_are_pinned(package: str) -> None:
    assert set(importlib.import_module(package).__all__) == PINNED[package]


def test_unknown_names_raise_attribute_error() -> None:
    for package in (
        "enclave",
        "ledger",
        "ledger.certificates",
        "enclave.capture",
        "enclave.replay",
        "enclave.keys",
    ):
        with pytest.raises(AttributeError):
            _ = importlib.import_module(package).no_such_name
