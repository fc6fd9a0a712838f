"""Certificates and release reports written out of the ledger as files.

The ledger's database holds the signed envelopes (``ledger._documents``); an export is
a ``<id>.dsse.json`` per document, for a reviewer who verifies offline, and beside it
its bundle (``<id>.bundle.json``: a certificate's made by ``enclave.replay``, a release
report's by ``enclave.release``) when asked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from ledger import list_certificates, list_reports, stored_certificate, stored_report

from ._errors import BadInput, InfrastructureError

__all__ = ["export_certificates", "export_reports"]

BundleOf = Callable[[str], Mapping[str, Any]]
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def _write_document(folder: Path, filename: str, document: Mapping[str, Any]) -> Path:
    path = folder / filename
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    except OSError:
        raise InfrastructureError("the export folder cannot be written") from None
    return path


def _check_folder(folder: Path) -> None:
    """``InfrastructureError`` unless ``folder`` is, or could be made, a writable folder."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise InfrastructureError("the export folder cannot be written")


def _write(folder: Path, name: str, envelope: Mapping[str, Any]) -> Path:
    return _write_document(folder, f"{name}.dsse.json", envelope)


def _ids(given: Sequence[str]) -> list[str]:
    if not all(_ID.fullmatch(i) for i in given):
        raise BadInput("an id is 1-128 of A-Z a-z 0-9 . _ : -")
    return sorted(set(given))


def export_certificates(
    engine: Engine,
    folder: Path,
    audit_ids: Sequence[str] = (),
    *,
    bundle_of: BundleOf | None = None,
) -> list[Path]:
    """Write ``<audit>.dsse.json`` for each stored certificate named (none named: all)
    and, given ``bundle_of``, its bundle ``<audit>.bundle.json`` beside it."""
    wanted = _ids(audit_ids) if audit_ids else [c.audit_id for c in list_certificates(engine)]
    found = [stored_certificate(engine, audit_id) for audit_id in wanted]
    if any(c is None for c in found):
        raise BadInput("no stored certificate has one of those audit ids")
    stored = [(c.audit_id, c.envelope) for c in found if c is not None]
    return _export(folder, stored, bundle_of)


def export_reports(
    engine: Engine,
    folder: Path,
    report_ids: Sequence[str] = (),
    *,
    bundle_of: BundleOf | None = None,
) -> list[Path]:
    """Write ``<report>.dsse.json`` for each stored report named (none named: all) and,
    given ``bundle_of``, its bundle ``<report>.bundle.json`` beside it."""
    wanted = _ids(report_ids) if report_ids else [r.report_id for r in list_reports(engine)]
    found = [stored_report(engine, report_id) for report_id in wanted]
    if any(r is None for r in found):
        raise BadInput("no stored release report has one of those ids")
    stored = [(r.report_id, r.envelope) for r in found if r is not None]
    return _export(folder, stored, bundle_of)


def _export(
    folder: Path, stored: list[tuple[str, dict[str, Any]]], bundle_of: BundleOf | None
) -> list[Path]:
    """Each ``(id, envelope)`` as ``<id>.dsse.json``, with ``<id>.bundle.json`` given
    ``bundle_of``. Every bundle is made before anything is written: one that cannot be
    leaves no file."""
    _check_folder(folder)  # before a bundle is made: making one may sign a checkpoint
    bundles = [bundle_of(name) for name, _ in stored] if bundle_of is not None else []
    for (name, _), bundle in zip(stored, bundles, strict=False):
        _write_document(folder, f"{name}.bundle.json", bundle)
    return [_write(folder, name, envelope) for name, envelope in stored]
