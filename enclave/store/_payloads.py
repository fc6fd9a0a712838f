"""The encrypted payload store: ciphertext only, one folder per specimen.

Layout under the store root::

    <tenant>/<specimen>/datakey.json   the wrapped data key (useless without the KEK)
    <tenant>/<specimen>/payloads.ct    frames: u32 key length, key, u32 blob length, blob

A field's reference is ``<tenant>/<specimen>/payloads.ct`` plus its field key
``<seq>/<side><path>``; the key selects a frame and never touches the filesystem.
Erasing a specimen deletes its folder: with the wrapped key gone the ciphertext is
unrecoverable even from backups (crypto-shredding).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .._errors import BadInput, DecryptionFailed, InfrastructureError
from ..keys import WrappedKey
from ._aead import field_aad, open_sealed, seal
from ._refs import resolve_ref, validate_id

__all__ = ["PayloadStore", "SpecimenWriter", "field_key"]

_U32 = struct.Struct(">I")
PAYLOAD_FILE = "payloads.ct"
DATAKEY_FILE = "datakey.json"


def field_key(seq: int, side: str, path: str) -> str:
    return f"{seq}/{side}{path}"


class SpecimenWriter:
    """Encrypts one specimen's fields under its data key and appends frames.

    ``durable=True`` flushes and fsyncs after every step; otherwise frames are buffered
    and written once by ``close`` (the seal is the commit point either way).
    """

    def __init__(
        self, *, folder: Path, tenant_id: str, specimen_id: str, data_key: bytes, durable: bool
    ) -> None:
        self._cipher = AESGCM(data_key)
        self._tenant, self._specimen = tenant_id, specimen_id
        self._durable = durable
        self._buffer: list[bytes] = []
        self._folder = folder
        self._ref = f"{tenant_id}/{specimen_id}/{PAYLOAD_FILE}"
        self._file = open(folder / PAYLOAD_FILE, "ab")  # noqa: SIM115 - closed in close()

    @property
    def ref(self) -> str:
        return self._ref

    def add_step(self, seq: int, fields: Iterable[tuple[str, str, bytes]]) -> None:
        """``fields``: (side, path, canonical plaintext bytes) for each retained field."""
        for side, path, plaintext in fields:
            key = field_key(seq, side, path).encode()
            blob = seal(self._cipher, plaintext, field_aad(self._tenant, self._specimen, seq, side, path))
            self._buffer.append(_U32.pack(len(key)) + key + _U32.pack(len(blob)) + blob)
        if self._durable:
            self._flush(sync=True)

    def _flush(self, *, sync: bool) -> None:
        self._file.write(b"".join(self._buffer))
        self._buffer.clear()
        self._file.flush()
        if sync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._flush(sync=True)
            self._file.close()

    def discard(self) -> None:
        """Abandon an unsealed specimen: remove everything written for it."""
        self._file.close()
        shutil.rmtree(self._folder, ignore_errors=True)


class PayloadStore:
    def __init__(self, *, root: Path) -> None:
        self._root = root

    def _folder(self, tenant_id: str, specimen_id: str) -> Path:
        validate_id(tenant_id, what="tenant id")
        validate_id(specimen_id, what="specimen id")
        return resolve_ref(self._root, f"{tenant_id}/{specimen_id}")

    def open_writer(
        self, tenant_id: str, specimen_id: str, *, wrapped: WrappedKey, data_key: bytes, durable: bool
    ) -> SpecimenWriter:
        folder = self._folder(tenant_id, specimen_id)
        try:
            folder.mkdir(parents=True, exist_ok=False, mode=0o700)
        except FileExistsError:
            raise BadInput("specimen id is already in use") from None
        (folder / DATAKEY_FILE).write_text(json.dumps(wrapped.to_dict()))
        return SpecimenWriter(
            folder=folder,
            tenant_id=tenant_id,
            specimen_id=specimen_id,
            data_key=data_key,
            durable=durable,
        )

    def wrapped_key(self, tenant_id: str, specimen_id: str) -> WrappedKey:
        path = self._folder(tenant_id, specimen_id) / DATAKEY_FILE
        try:
            return WrappedKey.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            raise DecryptionFailed() from None
        except (OSError, ValueError) as exc:
            raise InfrastructureError("wrapped key record is unreadable") from exc

    def replace_wrapped_key(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> None:
        path = self._folder(tenant_id, specimen_id) / DATAKEY_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(wrapped.to_dict()))
        os.replace(tmp, path)

    def read_fields(
        self, tenant_id: str, specimen_id: str, *, data_key: bytes
    ) -> dict[tuple[int, str, str], bytes]:
        """Decrypt every stored field of one specimen: {(seq, side, path): plaintext}."""
        path = resolve_ref(self._root, f"{tenant_id}/{specimen_id}/{PAYLOAD_FILE}")
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise DecryptionFailed() from None
        cipher = AESGCM(data_key)
        out: dict[tuple[int, str, str], bytes] = {}
        offset = 0
        try:
            while offset < len(raw):
                (klen,) = _U32.unpack_from(raw, offset)
                key = raw[offset + 4 : offset + 4 + klen].decode()
                offset += 4 + klen
                (blen,) = _U32.unpack_from(raw, offset)
                blob = raw[offset + 4 : offset + 4 + blen]
                offset += 4 + blen
                seq_text, _, rest = key.partition("/")
                side = "request" if rest.startswith("request") else "response"
                field_path = rest[len(side) :]
                seq = int(seq_text)
                aad = field_aad(tenant_id, specimen_id, seq, side, field_path)
                out[(seq, side, field_path)] = open_sealed(cipher, blob, aad)
        except (struct.error, UnicodeDecodeError, ValueError):
            raise DecryptionFailed() from None
        return out

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        """Crypto-shred: delete the wrapped data key first, then the ciphertext."""
        folder = self._folder(tenant_id, specimen_id)
        if not folder.exists():
            return False
        (folder / DATAKEY_FILE).unlink(missing_ok=True)
        shutil.rmtree(folder)
        return True
