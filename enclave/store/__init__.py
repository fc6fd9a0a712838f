"""The encrypted payload store: ciphertext and wrapped keys only."""

from ._aead import field_aad, open_sealed, seal
from ._payloads import PayloadStore, SpecimenWriter, field_key
from ._refs import resolve_ref, validate_id, validate_ref

__all__ = [
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
