"""What a payload store is: the interface the file store (``PayloadStore``) and the
database store (``DatabasePayloadStore``) both implement, so that capture, replay,
governed inference, erasure and rotation never know which one a home uses."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from ..keys import WrappedKey

__all__ = ["PayloadBackend", "SpecimenWriter"]


class SpecimenWriter(Protocol):
    """Encrypts one specimen's fields as they are captured; ``close`` seals them."""

    @property
    def ref(self) -> str:
        """``<tenant>/<specimen>/payloads.ct``: what the ledger records, in either store."""
        ...

    def add_step(self, seq: int, fields: Iterable[tuple[str, str, bytes]]) -> None: ...

    def close(self) -> None: ...

    def discard(self) -> None: ...


class PayloadBackend(Protocol):
    """Ciphertext and wrapped data keys, one specimen at a time; beside them, the sealed
    answers audits of the specimen obtained by governed inference
    (``enclave.replay.inference.InferenceRecord`` seals and opens them; the store only
    keeps the bytes). An answer's ``key`` is 64 lowercase hex characters, refused
    (``BadInput``) otherwise; ``erase`` removes the answers with the specimen."""

    def open_writer(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        data_key: bytes,
        durable: bool,
    ) -> SpecimenWriter: ...

    def wrapped_key(self, tenant_id: str, specimen_id: str) -> WrappedKey: ...

    def replace_wrapped_key(
        self, tenant_id: str, specimen_id: str, wrapped: WrappedKey
    ) -> None: ...

    def read_fields(
        self, tenant_id: str, specimen_id: str, *, data_key: bytes
    ) -> dict[tuple[int, str, str], bytes]: ...

    def erase(self, tenant_id: str, specimen_id: str) -> bool: ...

    # governed inference: the audits' sealed answers

    def answer(self, tenant_id: str, specimen_id: str, key: str) -> bytes | None:
        """The sealed answer kept under ``key``, or None."""
        ...

    def keep_answer(self, tenant_id: str, specimen_id: str, key: str, sealed: bytes) -> None:
        """Keep ``sealed`` under ``key`` unless an answer is kept there already: the first
        one kept stays. Batches of an audit run at once may ask the same thing and keep
        each its own answer; keeping the first means an answer, once any run could have
        been served it from the record, never changes under a later reader."""
        ...

    def answers(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[str, bytes]]:
        """Every (key, sealed answer) of the specimen, in key order (``payloads migrate``
        copies them with the specimen's frames)."""
        ...

    # whole specimens, no key needed: ``replay-enclave payloads migrate``

    def specimens(self) -> list[tuple[str, str]]: ...

    def frames(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[bytes, bytes]]: ...

    def import_specimen(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        frames: Iterable[tuple[bytes, bytes]],
    ) -> None: ...
