"""A payload store of a test's own for a broker's record of answers: it holds the
specimen's wrapped key (and no frames), as the home's store does, so the answers an
audit obtains can be kept there; a store without the specimen refuses them."""

from __future__ import annotations

from pathlib import Path

from enclave import Runtime
from enclave.store import PayloadStore

__all__ = ["answer_store"]


def answer_store(
    runtime: Runtime, root: Path, specimen_id: str, tenant_id: str = "acme"
) -> PayloadStore:
    store = PayloadStore(root=root)
    wrapped = runtime.payloads.wrapped_key(tenant_id, specimen_id)
    store.import_specimen(tenant_id, specimen_id, wrapped=wrapped, frames=())
    return store
