"""Payload frames: the one encoding both payload stores write and read.

A specimen's payloads are a sequence of frames, ``u32 key length, key, u32 blob length,
blob`` (big-endian lengths). A field frame's key is ``<seq>/<side><path>`` (UTF-8) and its
blob ``nonce + AES-GCM(plaintext)`` under the specimen's data key, with associated data
``replay-enclave/v1/<tenant>/<specimen>/<seq>/<side>/<path>``: a blob moved to another
field, specimen or tenant does not open. The last frame, key ``#end``, seals the number of
field frames before it (associated data ``.../<tenant>/<specimen>/#end``).

Invariants a reader (``FrameOpener``) enforces, each failing as ``DecryptionFailed``:

1. every frame is whole (no truncated length, key or blob);
2. exactly one end frame, and nothing after it;
3. the sealed count equals the number of field frames, and no field appears twice;
4. every blob opens under its own place's associated data;
5. with ``in_order``: when the end frame's nonce is the writer's counter nonce for that
   count (every writer since counter nonces), frame *i* carries counter *i*, so frames
   (or the chunks holding them) in another order fail too. Files from a writer with
   random nonces have no order to check and still read.

``FrameSealer`` is the only encryptor under a specimen's data key. Its nonces are
deterministic (NIST SP 800-38D, 8.2.1): 4 random bytes fixed per writer, then a 64-bit
counter, one value per frame, so no nonce repeats under one key.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .._errors import DecryptionFailed
from ._aead import NONCE_BYTES, aad_prefix, open_sealed

__all__ = [
    "END_KEY",
    "FrameOpener",
    "FrameSealer",
    "end_aad",
    "field_key",
    "pack_frame",
    "read_frames",
    "split_frames",
]

_U32 = struct.Struct(">I")
END_KEY = b"#end"
_SIDES = ("request", "response", "identity")
_PREFIX_BYTES = NONCE_BYTES - 8


def end_aad(tenant_id: str, specimen_id: str) -> bytes:
    return f"replay-enclave/v1/{tenant_id}/{specimen_id}/#end".encode()


def pack_frame(key: bytes, blob: bytes) -> bytes:
    return b"".join((_U32.pack(len(key)), key, _U32.pack(len(blob)), blob))


def field_key(seq: int, side: str, path: str) -> str:
    return f"{seq}/{side}{path}"


class FrameSealer:
    """Encrypts one specimen's fields into frames handed to a ``write`` callable."""

    __slots__ = ("_aad_prefix", "_cipher", "_end_aad", "_nonce_prefix", "_tail_cache", "frames")

    def __init__(self, *, tenant_id: str, specimen_id: str, data_key: bytes) -> None:
        self._cipher = AESGCM(data_key)
        # a field's AAD is this prefix + "<seq>/<side>/<path>": build the constant part once
        self._aad_prefix = aad_prefix(tenant_id, specimen_id)
        self._end_aad = end_aad(tenant_id, specimen_id)
        self._nonce_prefix = os.urandom(_PREFIX_BYTES)
        self._tail_cache: dict[tuple[str, str], tuple[bytes, bytes]] = {}
        self.frames = 0  # field frames sealed so far

    def _nonce(self) -> bytes:
        # one counter value per encryption, field frames and the end frame alike
        return self._nonce_prefix + self.frames.to_bytes(8, "big")

    def seal_step(
        self,
        seq: int,
        fields: Iterable[tuple[str, str, bytes]],
        write: Callable[[bytes], object],
    ) -> int:
        """Frame each (side, path, plaintext) of step ``seq``; returns the bytes written.
        Each frame reaches ``write`` in two pieces (head + nonce, then the sealed bytes),
        so it is never copied whole in between."""
        encrypt, pack, aad_prefix_ = self._cipher.encrypt, _U32.pack, self._aad_prefix
        step = b"%d/" % seq
        written = 0
        for side, path, plaintext in fields:
            aad_tail, key_tail = self._tails(side, path)
            nonce = self._nonce_prefix + self.frames.to_bytes(8, "big")
            sealed = encrypt(nonce, plaintext, aad_prefix_ + step + aad_tail)
            key = step + key_tail
            head = pack(len(key)) + key + pack(NONCE_BYTES + len(sealed)) + nonce
            write(head)
            write(sealed)
            written += len(head) + len(sealed)
            self.frames += 1
        return written

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

    def end_frame(self) -> bytes:
        """The sealed ``#end`` frame counting the field frames written."""
        nonce = self._nonce()
        count = _U32.pack(self.frames)
        return pack_frame(END_KEY, nonce + self._cipher.encrypt(nonce, count, self._end_aad))


def split_frames(raw: bytes | memoryview) -> Iterator[tuple[bytes, bytes]]:
    """(key, blob) of each frame in ``raw``, which must hold whole frames only; no key
    is needed. A truncated frame raises ``DecryptionFailed``."""
    offset, size = 0, len(raw)
    try:
        while offset < size:
            (klen,) = _U32.unpack_from(raw, offset)
            key = bytes(raw[offset + 4 : offset + 4 + klen])
            offset += 4 + klen
            (blen,) = _U32.unpack_from(raw, offset)
            blob = bytes(raw[offset + 4 : offset + 4 + blen])
            offset += 4 + blen
            if len(key) != klen or len(blob) != blen:
                raise DecryptionFailed()
            yield key, blob
    except struct.error:
        raise DecryptionFailed() from None


def read_frames(stream: BinaryIO) -> Iterator[tuple[bytes, bytes]]:
    """(key, blob) of each frame read from a binary stream, one frame in memory at a
    time; no key is needed. A truncated frame raises ``DecryptionFailed``."""
    while head := stream.read(4):
        key = stream.read(_U32.unpack(head)[0]) if len(head) == 4 else b""
        size = stream.read(4)
        if len(head) != 4 or len(size) != 4:
            raise DecryptionFailed()
        blob = stream.read(_U32.unpack(size)[0])
        if len(key) != _U32.unpack(head)[0] or len(blob) != _U32.unpack(size)[0]:
            raise DecryptionFailed()
        yield key, blob


def _place(key: bytes) -> tuple[int, str, str]:
    """(seq, side, path) of a field frame's key; field names may be any Unicode: the
    key is UTF-8, its seq ASCII digits."""
    try:
        seq_text, _, rest = key.decode("utf-8").partition("/")
    except UnicodeDecodeError:
        raise DecryptionFailed() from None
    side = rest.partition("/")[0]
    field_path = rest[len(side) :]
    if side not in _SIDES or not (seq_text.isascii() and seq_text.isdigit()):
        raise DecryptionFailed()
    if not field_path.startswith("/") or len(seq_text) > 20:
        raise DecryptionFailed()
    return int(seq_text), side, field_path


class FrameOpener:
    """Decrypts one specimen's frames, fed in order in pieces of whole frames; ``fields``
    checks the seal (see the module docstring for the invariants)."""

    def __init__(
        self, *, tenant_id: str, specimen_id: str, data_key: bytes, in_order: bool
    ) -> None:
        self._cipher = AESGCM(data_key)
        self._prefix = aad_prefix(tenant_id, specimen_id)
        self._end_aad = end_aad(tenant_id, specimen_id)
        self._in_order = in_order
        self._nonces: list[bytes] = []
        self._out: dict[tuple[int, str, str], bytes] = {}
        self._sealed: int | None = None
        self._end_nonce = b""

    def feed(self, raw: bytes | memoryview) -> None:
        cipher, out = self._cipher, self._out
        for key, blob in split_frames(raw):
            if self._sealed is not None:
                raise DecryptionFailed()  # nothing may follow the end frame
            if key == END_KEY:
                count = open_sealed(cipher, blob, self._end_aad)
                if len(count) != _U32.size:
                    raise DecryptionFailed()
                self._sealed = _U32.unpack(count)[0]
                self._end_nonce = blob[:NONCE_BYTES]
                continue
            where = _place(key)
            if where in out:
                raise DecryptionFailed()
            seq, side, field_path = where
            aad = self._prefix + f"{seq}/{side}/{field_path}".encode()
            out[where] = open_sealed(cipher, blob, aad)
            if self._in_order:
                self._nonces.append(blob[:NONCE_BYTES])

    def fields(self) -> dict[tuple[int, str, str], bytes]:
        """{(seq, side, path): plaintext} once every frame is fed and the seal holds."""
        count = len(self._out)
        if self._sealed != count:
            raise DecryptionFailed()
        prefix = self._end_nonce[:_PREFIX_BYTES]
        if self._in_order and self._end_nonce == prefix + count.to_bytes(8, "big"):
            for index, nonce in enumerate(self._nonces):
                if nonce != prefix + index.to_bytes(8, "big"):
                    raise DecryptionFailed()
        return self._out
