"""Issuing certificates: sign, append to the ledger, store the envelope in the database
(``certificates``, ``ledger._documents``) and, only when asked, export it as a
file; and the ledger adapter that verification uses.

A worker on another host shares only the database with whoever reads the certificate,
so the database row is the certificate's home; a file in the issuing process's home is
an export (the CLI ``audit`` asks for one, the job worker's finalizer does not)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger import Ledger, NotFound
from ledger.certificates import CertificateSigner, LocalSigner, envelope_digest

from .._issuer_key import IssuerKey
from .._runtime import Runtime

__all__ = [
    "RuntimeLedgerLookup",
    "issue_certificate",
    "signing_key",
]


def signing_key(runtime: Runtime) -> IssuerKey:
    """The home's issuer key (``enclave._issuer_key``): a local file, or in Vault mode a
    transit key that never leaves the key server."""
    return IssuerKey.of(runtime)


def _signer(runtime: Runtime) -> CertificateSigner:
    return runtime.signer or LocalSigner(signing_key(runtime))


def issue_certificate(
    runtime: Runtime,
    *,
    audit_id: str,
    specimen_id: str,
    manifest_digest: str,
    predicate: dict[str, Any],
    export_dir: Path | None = None,
) -> tuple[dict[str, Any], Path | None, int]:
    """Sign, append ``certificate.issued``, then store the envelope (idempotently: a
    re-delivered finalizer signs the same statement); with ``export_dir`` also write
    ``<audit>.dsse.json`` there. Returns (envelope, the file or None, ledger index)."""
    from ledger import store_certificate

    from .._exports import export_certificates

    envelope = _signer(runtime).sign_certificate(
        specimen_id=specimen_id, manifest_digest=manifest_digest, predicate=predicate
    )
    position = runtime.ledger.append(
        "certificate.issued",
        audit_id,
        {
            "audit_id": audit_id,
            "specimen_id": specimen_id,
            "envelope_digest": envelope_digest(envelope),
            "classification": predicate["classification"],
            "auditability": predicate["auditability"]["class"],
        },
    )
    store_certificate(
        runtime.ledger.engine,
        audit_id=audit_id,
        specimen_id=specimen_id,
        tenant_id=runtime.ledger.get_specimen(specimen_id).tenant_id,
        envelope=envelope,
    )
    path = None
    if export_dir is not None:
        (path,) = export_certificates(runtime.ledger.engine, export_dir, [audit_id])
    return envelope, path, position.index


class RuntimeLedgerLookup:
    """``ledger.certificates.LedgerLookup`` over the real ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def specimen_manifest_digest(self, specimen_id: str) -> str | None:
        try:
            return self._ledger.get_specimen(specimen_id).manifest_digest
        except NotFound:
            return None

    def specimen_position(self, specimen_id: str) -> tuple[int, str] | None:
        entries = self._ledger.entries(kind="specimen.sealed", subject=specimen_id)
        return (entries[0].index, entries[0].entry_hash) if entries else None

    def certificate_entry(self, envelope_digest: str) -> tuple[int, str] | None:
        for entry in self._ledger.entries(kind="certificate.issued"):
            if entry.body.get("envelope_digest") == envelope_digest:
                return entry.index, entry.entry_hash
        return None

    def report_entry(
        self, selection_digest: str, report_id: str, envelope_digest: str
    ) -> Mapping[str, Any] | None:
        """The body of the ``release.reported`` entry of this report: its selection's
        entry naming its id (and, since entries carry it, its whole envelope digest)."""
        for entry in self._ledger.entries(kind="release.reported", subject=selection_digest):
            body = entry.body
            if (
                body.get("report_id") == report_id
                and body.get("envelope_digest", envelope_digest) == envelope_digest
            ):
                return body
        return None
