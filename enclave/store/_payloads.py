"""The encrypted payload store: ciphertext only, one folder per specimen.

Layout under the store root::

    <tenant>/<specimen>/datakey.json   the wrapped data key (useless without the KEK)
    <tenant>/<specimen>/payloads.ct    frames: u32 key length, key, u32 blob length, blob
    <tenant>/<specimen>/answers/<key>.ct
                                       an answer audits of the specimen obtained by
                                       governed inference, sealed by ``InferenceRecord``

A field's reference is ``<tenant>/<specimen>/payloads.ct`` plus its field key
``<seq>/<side><path>``; the key selects a frame and never touches the filesystem.
``close`` appends one last frame, key ``#end``, sealing the number of field frames
before it: a reader refuses a file without it, with frames after it, with a different
number of frames or with a field key twice, so a dropped, duplicated or truncated frame
fails like any other tampering (``DecryptionFailed``). Every blob is bound to its place
by its associated data, so frames cannot be moved between fields or specimens either.
An answer's file is written whole (a private temporary, fsynced, then linked in place)
and never replaced: the first answer kept under a key stays, and a write cut short
leaves only a temporary that no reader lists. Erasing a specimen deletes its folder,
answers included: with the wrapped key gone the ciphertext is unrecoverable even from
backups (crypto-shredding).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from ledger import raise_unchained

from .._errors import BadInput, DecryptionFailed, InfrastructureError
from ..keys import WrappedKey
from ._frames import FrameOpener, FrameSealer, field_key, pack_frame, read_frames
from ._refs import ANSWER_KEY, resolve_ref, validate_answer_key, validate_id

__all__ = ["FileSpecimenWriter", "PayloadStore", "field_key"]

PAYLOAD_FILE = "payloads.ct"
DATAKEY_FILE = "datakey.json"
ANSWERS_DIR = "answers"
_BUFFER_BYTES = 1 << 20  # batched frames reach the file in ~1 MiB writes
_WRITEBACK_BYTES = 4 << 20  # and go to the kernel's writeback every ~4 MiB
_ADVISE = getattr(os, "posix_fadvise", None)  # not on macOS: there the seal's fsync does it all
_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", 0)


class FileSpecimenWriter:
    """Encrypts one specimen's fields under its data key and appends frames
    (``enclave.store._frames``: encoding, associated data, nonces).

    ``durable=True`` flushes and fsyncs after every step; otherwise frames go through a
    bounded buffer (written as it fills, while they are still in cache, never holding a
    whole run in memory), are handed to the kernel's writeback every few MiB, and are
    fsynced once by ``close``. The seal is the commit point either way: a run that
    never seals has its folder deleted.
    """

    def __init__(
        self, *, folder: Path, tenant_id: str, specimen_id: str, data_key: bytes, durable: bool
    ) -> None:
        self._sealer = FrameSealer(tenant_id=tenant_id, specimen_id=specimen_id, data_key=data_key)
        self._durable = durable
        self._written_back = self._unsynced = 0  # file offset handed to writeback; bytes since
        self._folder = folder
        self._ref = f"{tenant_id}/{specimen_id}/{PAYLOAD_FILE}"
        # closed in close() or discard()
        self._file = open(folder / PAYLOAD_FILE, "ab", buffering=_BUFFER_BYTES)  # noqa: SIM115

    @property
    def ref(self) -> str:
        return self._ref

    def add_step(self, seq: int, fields: Iterable[tuple[str, str, bytes]]) -> None:
        """``fields``: (side, path, canonical plaintext bytes) for each retained field."""
        if self._file.closed:
            raise ValueError("the writer is closed")
        self._unsynced += self._sealer.seal_step(seq, fields, self._file.write)
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

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._unsynced = 0

    def close(self) -> None:
        """Seal the frame count and make everything durable (idempotent)."""
        if not self._file.closed:
            self._file.write(self._sealer.end_frame())
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
    ) -> FileSpecimenWriter:
        folder = self._create(tenant_id, specimen_id, wrapped)
        return FileSpecimenWriter(
            folder=folder,
            tenant_id=tenant_id,
            specimen_id=specimen_id,
            data_key=data_key,
            durable=durable,
        )

    def _create(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> Path:
        """The specimen's new private folder, holding its wrapped key."""
        folder = self._folder(tenant_id, specimen_id)
        for parent in (self._root, folder.parent):
            # mkdir(parents=True) would create these with the default mode
            parent.mkdir(exist_ok=True, mode=0o700)
        try:
            folder.mkdir(exist_ok=False, mode=0o700)
        except FileExistsError:
            raise BadInput("specimen id is already in use") from None
        (folder / DATAKEY_FILE).write_text(json.dumps(wrapped.to_dict()))
        return folder

    def wrapped_key(self, tenant_id: str, specimen_id: str) -> WrappedKey:
        path = self._folder(tenant_id, specimen_id) / DATAKEY_FILE
        try:
            return WrappedKey.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            raise DecryptionFailed() from None
        except (OSError, ValueError):  # a decode error's ``doc`` is the whole record
            raise_unchained(InfrastructureError("wrapped key record is unreadable"))

    def replace_wrapped_key(self, tenant_id: str, specimen_id: str, wrapped: WrappedKey) -> None:
        path = self._folder(tenant_id, specimen_id) / DATAKEY_FILE
        if not path.is_file():
            raise DecryptionFailed()  # no key to replace: as if erased
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
        # the file store accepts field frames in any order (each is bound to its place)
        opener = FrameOpener(
            tenant_id=tenant_id, specimen_id=specimen_id, data_key=data_key, in_order=False
        )
        opener.feed(raw)
        return opener.fields()

    # -- whole specimens, no key needed (``payloads migrate``) ---------------------------

    def specimens(self) -> list[tuple[str, str]]:
        """(tenant, specimen) of every specimen with a wrapped key, sorted."""
        found = []
        for key_file in self._root.glob(f"*/*/{DATAKEY_FILE}") if self._root.is_dir() else ():
            tenant, specimen = key_file.parent.parent.name, key_file.parent.name
            try:
                self._folder(tenant, specimen)
            except BadInput:
                continue  # not a folder this store made
            found.append((tenant, specimen))
        return sorted(found)

    def frames(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[bytes, bytes]]:
        """The specimen's raw frames (key, blob) in stored order, one at a time."""
        path = self._folder(tenant_id, specimen_id) / PAYLOAD_FILE
        try:
            with path.open("rb", buffering=_BUFFER_BYTES) as stream:
                yield from read_frames(stream)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InfrastructureError("payload file is unreadable") from exc

    def import_specimen(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        frames: Iterable[tuple[bytes, bytes]],
    ) -> None:
        """Store a copy of another store's specimen: its wrapped key and its frames as
        they are (refused, ``BadInput``, when the id is in use here)."""
        folder = self._create(tenant_id, specimen_id, wrapped)
        with open(folder / PAYLOAD_FILE, "ab", buffering=_BUFFER_BYTES) as out:
            for key, blob in frames:
                out.write(pack_frame(key, blob))
            out.flush()
            os.fsync(out.fileno())

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        """Crypto-shred: delete the wrapped data key first, then the ciphertext."""
        folder = self._folder(tenant_id, specimen_id)
        if not folder.exists():
            return False
        (folder / DATAKEY_FILE).unlink(missing_ok=True)
        shutil.rmtree(folder)
        return True

    # -- governed inference: the audits' sealed answers ---------------------------------

    def _answer_path(self, tenant_id: str, specimen_id: str, key: str) -> Path:
        validate_answer_key(key)
        return self._folder(tenant_id, specimen_id) / ANSWERS_DIR / f"{key}.ct"

    def answer(self, tenant_id: str, specimen_id: str, key: str) -> bytes | None:
        """The sealed answer kept under ``key``, or None."""
        try:
            return self._answer_path(tenant_id, specimen_id, key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InfrastructureError("inference answer is unreadable") from exc

    def keep_answer(self, tenant_id: str, specimen_id: str, key: str, sealed: bytes) -> None:
        """Keep ``sealed`` under ``key`` unless an answer is kept there already; as if
        the key were gone (``DecryptionFailed``) when the specimen is not stored here:
        an audit still running when its specimen is erased brings nothing back."""
        path = self._answer_path(tenant_id, specimen_id, key)
        try:
            self._keep(path, sealed)
        except FileNotFoundError:
            raise DecryptionFailed() from None  # erased meanwhile: its folder is gone
        except OSError as exc:
            raise InfrastructureError("inference answer could not be kept") from exc

    def _keep(self, path: Path, sealed: bytes) -> None:
        folder = path.parent
        if not (folder.parent / DATAKEY_FILE).is_file():
            raise DecryptionFailed()  # erased, or never sealed: no folder is made for it
        folder.mkdir(exist_ok=True, mode=0o700)  # never its parents: the specimen's own
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with open(fd, "wb") as out:
                out.write(sealed)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, path)  # atomic, and never over an answer already kept
            except FileExistsError:
                pass  # the first answer kept stays
        finally:
            os.unlink(tmp)

    def answers(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[str, bytes]]:
        """Every (key, sealed answer) of the specimen, in key order."""
        folder = self._folder(tenant_id, specimen_id) / ANSWERS_DIR
        return self._answers(folder)

    def _answers(self, folder: Path) -> Iterator[tuple[str, bytes]]:
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InfrastructureError("inference answers are unreadable") from exc
        for name in names:
            key = name.removesuffix(".ct")
            if key == name or not ANSWER_KEY.fullmatch(key):
                continue  # a temporary a write cut short left behind
            try:
                yield key, (folder / name).read_bytes()
            except OSError as exc:
                raise InfrastructureError("inference answer is unreadable") from exc
