"""The encrypted payload store: ciphertext and wrapped keys only.

Two backends with one interface: ``PayloadStore`` (files under the home) and
``DatabasePayloadStore`` (the ledger's database); the frame encoding both write
(``FrameSealer``, ``FrameOpener``); the home's payload lock (``GuardedPayloads``,
``moving_payloads``) and ``migrate``, which moves a home's payloads between the two.

Every name is imported on first use, so that a command that never opens the database
store does not load the database layer.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._aead import field_aad as field_aad
    from ._aead import open_sealed as open_sealed
    from ._aead import seal as seal
    from ._db_payloads import DatabasePayloadStore as DatabasePayloadStore
    from ._db_payloads import DatabaseSpecimenWriter as DatabaseSpecimenWriter
    from ._frames import END_KEY as END_KEY
    from ._frames import FrameOpener as FrameOpener
    from ._frames import FrameSealer as FrameSealer
    from ._frames import end_aad as end_aad
    from ._frames import pack_frame as pack_frame
    from ._frames import split_frames as split_frames
    from ._in_use import GuardedPayloads as GuardedPayloads
    from ._in_use import PayloadsMoving as PayloadsMoving
    from ._in_use import moving_payloads as moving_payloads
    from ._interface import PayloadBackend as PayloadBackend
    from ._interface import SpecimenWriter as SpecimenWriter
    from ._migrate import MigrationSummary as MigrationSummary
    from ._migrate import migrate as migrate
    from ._payloads import FileSpecimenWriter as FileSpecimenWriter
    from ._payloads import PayloadStore as PayloadStore
    from ._payloads import field_key as field_key
    from ._refs import resolve_ref as resolve_ref
    from ._refs import validate_id as validate_id
    from ._refs import validate_ref as validate_ref

_FRONT = {
    "field_aad": "._aead",
    "open_sealed": "._aead",
    "seal": "._aead",
    "DatabasePayloadStore": "._db_payloads",
    "DatabaseSpecimenWriter": "._db_payloads",
    "END_KEY": "._frames",
    "FrameOpener": "._frames",
    "FrameSealer": "._frames",
    "end_aad": "._frames",
    "pack_frame": "._frames",
    "split_frames": "._frames",
    "GuardedPayloads": "._in_use",
    "PayloadsMoving": "._in_use",
    "moving_payloads": "._in_use",
    "PayloadBackend": "._interface",
    "SpecimenWriter": "._interface",
    "MigrationSummary": "._migrate",
    "migrate": "._migrate",
    "FileSpecimenWriter": "._payloads",
    "PayloadStore": "._payloads",
    "field_key": "._payloads",
    "resolve_ref": "._refs",
    "validate_id": "._refs",
    "validate_ref": "._refs",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
