"""Per-specimen crypto-shredding and key lifecycle operations.

``erase_specimen``: the ledger records the erasure first (it refuses a specimen under
legal hold, and then nothing is destroyed); then the payload store deletes the
specimen's wrapped data key, its ciphertext and the answers its audits obtained by
governed inference (sealed under a key derived from the data key). The ledger keeps the
specimen's digests and manifest — metadata only — so history stays verifiable, and any
later audit is refused as unresolvable. Run-time identities (idempotency tokens,
undeclared aliases and resolved identities) are keyed digests in the ledger and
plaintext only in the ciphertext, so they go with it.

``rewrap_tenant``: after a KEK rotation, re-wrap every specimen's data key under the
newest version. ``trim`` (provider-specific) then destroys old versions: every data
key still wrapped by them becomes unrecoverable — erasure per key *version* (a
retention bucket), not per specimen.
"""

from __future__ import annotations

import contextlib
import shutil
from datetime import datetime
from pathlib import Path

from ledger import Conflict, NotFound, SpecimenFilter

from ._errors import Refused
from ._runtime import Runtime
from .store import validate_id

__all__ = ["erase_specimen", "rewrap_tenant"]


def erase_specimen(runtime: Runtime, specimen_id: str, *, now: datetime) -> int:
    """Erase one specimen's payloads; returns the ledger index of the erasure entry."""
    try:
        record = runtime.ledger.get_specimen(specimen_id)
        position = runtime.ledger.mark_erased(specimen_id, erased_at=now.isoformat())
    except NotFound:
        raise Refused("no sealed specimen has that id", code="unknown_specimen") from None
    except Conflict:
        raise Refused(
            "the specimen is under legal hold or already erased", code="erasure_refused"
        ) from None
    runtime.payloads.erase(record.tenant_id, specimen_id)  # the audits' answers too
    _erase_answers_kept_apart(runtime.home.root, record.tenant_id, specimen_id)
    return position.index


def _erase_answers_kept_apart(home_root: Path, tenant_id: str, specimen_id: str) -> None:
    """Inference answers a home kept in ``<home>/inference/<tenant>/<specimen>/`` before
    its payload store held them: unreadable once the data key is erased, removed too."""
    folder = home_root / "inference" / validate_id(tenant_id, what="tenant id")
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(folder / validate_id(specimen_id, what="specimen id"))


def rewrap_tenant(runtime: Runtime, tenant_id: str) -> int:
    """Re-wrap every live specimen of a tenant under its newest KEK version."""
    count = 0
    before: int | None = None
    while True:  # keyset pages: a specimen sealed meanwhile neither shifts nor repeats one
        page = runtime.ledger.specimen_page(
            SpecimenFilter(tenant_id=tenant_id), limit=200, before=before
        )
        for summary in page.items:
            if summary.erased:
                continue
            wrapped = runtime.payloads.wrapped_key(tenant_id, summary.specimen_id)
            fresh = runtime.rotator.rewrap(tenant_id, summary.specimen_id, wrapped)
            runtime.payloads.replace_wrapped_key(tenant_id, summary.specimen_id, fresh)
            count += 1
        if page.next_before is None:
            return count
        before = page.next_before
