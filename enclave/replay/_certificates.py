"""Issuing certificates: sign, append to the ledger, write the file; and the ledger
adapter that verification uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from ledger import Ledger, NotFound

from .._runtime import Runtime
from ..certify import SigningKey, build_statement, envelope_digest, sign_statement

__all__ = [
    "CertificateSigner",
    "LocalSigner",
    "RuntimeLedgerLookup",
    "issue_certificate",
    "signing_key",
]


class CertificateSigner(Protocol):
    """Signs one audit's certificate: names itself as the predicate's issuer, checks the
    statement (``sign_statement``) and returns the DSSE envelope."""

    def sign_certificate(
        self, *, specimen_id: str, manifest_digest: str, predicate: dict[str, Any]
    ) -> dict[str, Any]: ...


class LocalSigner:
    """The home's own Ed25519 key."""

    def __init__(self, key: SigningKey) -> None:
        self._key = key

    def sign_certificate(
        self, *, specimen_id: str, manifest_digest: str, predicate: dict[str, Any]
    ) -> dict[str, Any]:
        predicate = {**predicate, "issuer": self._key.keyid}
        statement = build_statement(
            specimen_id=specimen_id, manifest_digest=manifest_digest, predicate=predicate
        )
        return sign_statement(statement, self._key)


def signing_key(runtime: Runtime) -> SigningKey:
    return SigningKey.load_or_create(runtime.home.signing_key_path)


def _signer(runtime: Runtime) -> CertificateSigner:
    return runtime.signer or LocalSigner(signing_key(runtime))


def issue_certificate(
    runtime: Runtime,
    *,
    audit_id: str,
    specimen_id: str,
    manifest_digest: str,
    predicate: dict[str, Any],
) -> tuple[dict[str, Any], Path, int]:
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
    runtime.home.certificates_dir.mkdir(parents=True, exist_ok=True)
    path = runtime.home.certificates_dir / f"{audit_id}.dsse.json"
    path.write_text(json.dumps(envelope, indent=2, sort_keys=True) + "\n")
    return envelope, path, position.index


class RuntimeLedgerLookup:
    """``certify.LedgerLookup`` over the real ledger."""

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
