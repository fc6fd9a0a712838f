"""The encrypted payload store: ciphertext only, one folder per specimen.

Layout under the store root::

    <tenant>/<specimen>/datakey.json   the wrapped data key (useless without the KEK)
    <tenant>/<specimen>/payloads.ct    frames: u32 key length, key, u32 blob length, blob

A field's reference is ``<tenant>/<specimen>/payloads.ct`` plus its field key
``<seq>/<side><path>``; the key selects a frame and never touches the filesystem.
``close`` appends one last frame, key ``#end``, sealing the number of field frames
before it: a reader refuses a file without it, with frames after it, with a different
number of frames or with a field key twice, so a dropped, duplicated or truncated frame
fails like any other tampering (``DecryptionFailed``). Every blob is bound to its place
by its associated data, so frames cannot be moved between fields or specimens either.
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
from ._aead import NONCE_BYTES, aad_prefix, open_sealed
from ._refs import resolve_ref, validate_id

__all__ = ["PayloadStore", "SpecimenWriter", "field_key"]

_U32 = struct.Struct(">I")
PAYLOAD_FILE = "payloads.ct"
DATAKEY_FILE = "datakey.json"
END_KEY = b"#end"
_BUFFER_BYTES = 1 << 20  # batched frames reach the file in ~1 MiB writes
_WRITEBACK_BYTES = 4 << 20  # and go to the kernel's writeback every ~4 MiB
_ADVISE = getattr(os, "posix_fadvise", None)  # not on macOS: there the seal's fsync does it all
_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", 0)


def _end_aad(tenant_id: str, specimen_id: str) -> bytes:
    return f"replay-enclave/v1/{tenant_id}/{specimen_id}/#end".encode()


def _frame(key: bytes, blob: bytes) -> bytes:
    return b"".join((_U32.pack(len(key)), key, _U32.pack(len(blob)), blob))


def field_key(seq: int, side: str, path: str) -> str:
    return f"{seq}/{side}{path}"


class SpecimenWriter:
    """Encrypts one specimen's fields under its data key and appends frames.

    ``durable=True`` flushes and fsyncs after every step; otherwise frames go through a
    bounded buffer (written as it fills, while they are still in cache, never holding a
    whole run in memory), are handed to the kernel's writeback every few MiB, and are
    fsynced once by ``close``. The seal is the commit point either way: a run that
    never seals has its folder deleted.

    Nonces are deterministic (NIST SP 800-38D, 8.2.1): 4 random bytes fixed per writer,
    then a 64-bit counter. The data key is fresh per specimen and this writer is the only
    party that ever encrypts under it, so no nonce repeats under one key.
    """

    def __init__(
        self, *, folder: Path, tenant_id: str, specimen_id: str, data_key: bytes, durable: bool
    ) -> None:
        self._cipher = AESGCM(data_key)
        self._tenant, self._specimen = tenant_id, specimen_id
        # field_aad() is this prefix + "<seq>/<side>/<path>": build the constant part once
        self._aad_prefix = aad_prefix(tenant_id, specimen_id)
        self._nonce_prefix = os.urandom(NONCE_BYTES - 8)
        self._durable = durable
        self._frames = 0
        self._written_back = self._unsynced = 0  # file offset handed to writeback; bytes since
        self._tail_cache: dict[tuple[str, str], tuple[bytes, bytes]] = {}
        self._folder = folder
        self._ref = f"{tenant_id}/{specimen_id}/{PAYLOAD_FILE}"
        # closed in close() or discard()
        self._file = open(folder / PAYLOAD_FILE, "ab", buffering=_BUFFER_BYTES)  # noqa: SIM115

    @property
    def ref(self) -> str:
        return self._ref

    def _nonce(self) -> bytes:
        # one counter value per encryption, field frames and the end frame alike
        return self._nonce_prefix + self._frames.to_bytes(8, "big")

    def add_step(self, seq: int, fields: Iterable[tuple[str, str, bytes]]) -> None:
        """``fields``: (side, path, canonical plaintext bytes) for each retained field."""
        if self._file.closed:
            raise ValueError("the writer is closed")
        encrypt, write, pack = self._cipher.encrypt, self._file.write, _U32.pack
        step = b"%d/" % seq
        for side, path, plaintext in fields:
            aad_tail, key_tail = self._tails(side, path)
            nonce = self._nonce()
            sealed = encrypt(nonce, plaintext, self._aad_prefix + step + aad_tail)
            key = step + key_tail
            # frame = u32 len(key), key, u32 len(blob), blob; blob = nonce + sealed
            head = pack(len(key)) + key + pack(NONCE_BYTES + len(sealed)) + nonce
            write(head)
            write(sealed)
            self._unsynced += len(head) + len(sealed)
            self._frames += 1
        if self._durable:
            self._sync()
        elif self._unsynced >= _WRITEBACK_BYTES:
            self._start_writeback()

    def _start_writeback(self) -> None:
        """Hand what is written so far to the kernel's writeback without waiting, so
        the disk works while capture goes on and the seal's fsync finds little left
        (otherwise a large batched specimen stalls the seal on all of it at once)."""
        self._file.flush()
        end = self._file.tell()
        if _ADVISE is not None:
            # on Linux this starts asynchronous writeback of the range (Python has no
            # sync_file_range); the pages are dropped once clean: nothing reads them
            # back before the seal
            _ADVISE(self._file.fileno(), self._written_back, end - self._written_back, _DONTNEED)
        self._written_back, self._unsynced = end, 0

    def _tails(self, side: str, path: str) -> tuple[bytes, bytes]:
        """The per-field parts of the AAD (``<side>/<path>``) and of the frame key
        (``<side><path>``), encoded once per field name rather than once per step."""
        tails = self._tail_cache.get((side, path))
        if tails is None:
            tails = self._tail_cache[side, path] = (
                f"{side}/{path}".encode(),
                f"{side}{path}".encode(),
            )
        return tails

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._unsynced = 0

    def close(self) -> None:
        """Seal the frame count and make everything durable (idempotent)."""
        if not self._file.closed:
            nonce = self._nonce()
            count = _U32.pack(self._frames)
            aad = _end_aad(self._tenant, self._specimen)
            self._file.write(_frame(END_KEY, nonce + self._cipher.encrypt(nonce, count, aad)))
            self._sync()
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
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        data_key: bytes,
        durable: bool,
    ) -> SpecimenWriter:
        folder = self._folder(tenant_id, specimen_id)
        for parent in (self._root, folder.parent):
            # mkdir(parents=True) would create these with the default mode
            parent.mkdir(exist_ok=True, mode=0o700)
        try:
            folder.mkdir(exist_ok=False, mode=0o700)
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
        path = self._folder(tenant_id, specimen_id) / PAYLOAD_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise DecryptionFailed() from None
        except OSError as exc:
            raise InfrastructureError("payload file is unreadable") from exc
        cipher = AESGCM(data_key)
        prefix = aad_prefix(tenant_id, specimen_id)
        out: dict[tuple[int, str, str], bytes] = {}
        offset, frames, sealed_count = 0, 0, None
        try:
            while offset < len(raw):
                if sealed_count is not None:
                    raise DecryptionFailed()  # nothing may follow the end frame
                (klen,) = _U32.unpack_from(raw, offset)
                key = raw[offset + 4 : offset + 4 + klen]
                offset += 4 + klen
                (blen,) = _U32.unpack_from(raw, offset)
                blob = raw[offset + 4 : offset + 4 + blen]
                offset += 4 + blen
                if len(key) != klen or len(blob) != blen:
                    raise DecryptionFailed()
                if key == END_KEY:
                    sealed_count = _U32.unpack(
                        open_sealed(cipher, blob, _end_aad(tenant_id, specimen_id))
                    )[0]
                    continue
                # field names may be any Unicode: the key is UTF-8, its seq ASCII digits
                seq_text, _, rest = key.decode("utf-8").partition("/")
                side = rest.partition("/")[0]
                field_path = rest[len(side) :]
                if side not in ("request", "response", "identity") or not (
                    seq_text.isascii() and seq_text.isdigit()
                ):
                    raise DecryptionFailed()
                seq = int(seq_text)
                where = (seq, side, field_path)
                if where in out or not field_path.startswith("/"):
                    raise DecryptionFailed()
                aad = prefix + f"{seq}/{side}/{field_path}".encode()
                out[where] = open_sealed(cipher, blob, aad)
                frames += 1
        except (struct.error, UnicodeDecodeError, ValueError):
            raise DecryptionFailed() from None
        if sealed_count != frames:
            raise DecryptionFailed()
        return out

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        """Crypto-shred: delete the wrapped data key first, then the ciphertext."""
        folder = self._folder(tenant_id, specimen_id)
        if not folder.exists():
            return False
        (folder / DATAKEY_FILE).unlink(missing_ok=True)
        shutil.rmtree(folder)
        return True
