"""Verify a release report and every certificate it names, with the home's ledger.

The five checks are the verifier's (``ledger.certificates.report_checks``: signature and
statement, selection digest, certificates, totals and gate, ledger entry). Here every
listed certificate is found in the database's ``certificates`` (or a directory of
``*.dsse.json`` exported from it) and passes the full certificate verification, ledger
included; the ``release.reported`` entry is looked up in the ledger.

A report bundle (``<report>.bundle.json``) is verified offline with the issuer's key and
the log's key alone by ``ledger.certificates.verify_report_bundle``, re-exported here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.certificates import (
    REPORT_BUNDLE_MEDIA_TYPE,
    CertificateInvalid,
    PredicateInvalid,
    ReportCheck,
    envelope_digest,
    is_report_bundle,
    make_report_bundle,
    report_checks,
    verify_certificate,
    verify_report_bundle,
)

from ._report import REPORT_TYPE, REPORT_TYPE_V1

__all__ = [
    "REPORT_BUNDLE_MEDIA_TYPE",
    "is_report",
    "is_report_bundle",
    "make_report_bundle",
    "verify_report",
    "verify_report_bundle",
]


def is_report(envelope: Mapping[str, Any]) -> bool:
    try:
        statement = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
        return isinstance(statement, dict) and statement.get("predicateType") in (
            REPORT_TYPE,
            REPORT_TYPE_V1,
        )
    except (ValueError, TypeError, KeyError):
        return False


def _certificates(folder: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.dsse.json")):
        try:
            envelope = json.loads(path.read_bytes())
            found[envelope_digest(envelope)] = envelope
        except (OSError, ValueError, CertificateInvalid, PredicateInvalid):
            continue  # a malformed file is simply not a certificate
    return found


CertificateSource = Callable[[Iterable[str]], Mapping[str, dict[str, Any]]]


def verify_report(
    envelope: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey,
    ledger_lookup: Any,
    certificates_dir: Path | None = None,
    certificate_source: CertificateSource | None = None,
) -> list[ReportCheck]:
    """``certificates_dir``: a folder of exported certificates; ``certificate_source``:
    the stored envelopes by digest (``_documents.certificates_by_digest``). One of them."""
    if (certificates_dir is None) == (certificate_source is None):
        raise TypeError("give one of certificates_dir or certificate_source")

    def found(named: list[str]) -> Mapping[str, Mapping[str, Any]]:
        if certificates_dir is not None:
            return _certificates(certificates_dir)
        assert certificate_source is not None
        return dict(certificate_source(named))

    def member_ok(certificate: Mapping[str, Any]) -> bool:
        return verify_certificate(
            certificate, public_key=public_key, ledger_lookup=ledger_lookup
        ).ok

    def recorded(selection: Any, report_id: str, digest: str) -> tuple[Any, str]:
        # without a ledger, nothing shows the report was recorded
        body = (
            None
            if ledger_lookup is None
            else ledger_lookup.report_entry(selection, report_id, digest)
        )
        return body, "release.reported" if body is not None else "no entry records it"

    return report_checks(envelope, public_key, found, member_ok, recorded)
