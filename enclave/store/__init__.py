"""The encrypted payload store: ciphertext and wrapped keys only.

Two backends with one interface: ``PayloadStore`` (files under the home) and
``DatabasePayloadStore`` (the ledger's database; imported on first use, so that a
command that never opens it does not load the database layer).
"""

from typing import TYPE_CHECKING, Any

from ._aead import field_aad, open_sealed, seal
from ._interface import PayloadBackend, SpecimenWriter
from ._payloads import FileSpecimenWriter, PayloadStore, field_key
from ._refs import resolve_ref, validate_id, validate_ref

if TYPE_CHECKING:
    from ._db_payloads import DatabasePayloadStore, DatabaseSpecimenWriter

__all__ = [
    "DatabasePayloadStore",
    "DatabaseSpecimenWriter",
    "FileSpecimenWriter",
    "PayloadBackend",
    "PayloadStore",
    "SpecimenWriter",
    "field_aad",
    "field_key",
    "open_sealed",
    "resolve_ref",
    "seal",
    "validate_id",
    "validate_ref",
]


def __getattr__(name: str) -> Any:
    if name in ("DatabasePayloadStore", "DatabaseSpecimenWriter"):
        from . import _db_payloads

        return getattr(_db_payloads, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
