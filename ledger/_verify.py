"""Verify the stored ledger. Read-only; runs on one snapshot of the database.

The checks, in order (the report names the first that fails, and the first bad index):

1. **chain** — entries are read in index order. Entry *i* must exist (a deleted row
   leaves a gap: reason "missing entry"), link to *i - 1* (``prev_hash``; genesis for
   0), hold canonical body text, and hash to its stored ``entry_hash`` under the rule
   in ``ledger._chain``. An edited row fails here.
2. **tip** — the ``ledger_tip`` row must agree with the chain's length and last hash
   (tail truncation that leaves the tip alone fails here).
3. **saved head** — when a saved head (index + hash, kept outside the database) is
   given, the chain must reach it and hold exactly that hash at that index. This is
   what catches a truncation that also moved the tip back, and an edit followed by a
   consistent recomputation of every later hash ("rechain"). A head cannot say *where*
   a rewrite began, so for a rechain the reported index is the saved head's.
4. **tree** — the Merkle tree (``ledger._tree``) agrees with the entries: every leaf
   checked is SHA-256(0x00 ‖ the entry's canonical bytes) and every subtree those
   leaves complete is stored exactly as recomputed, and no stored subtree reaches past
   the chain. A tree whose nodes were edited, removed or grown apart from the chain
   fails here: the proofs it would give no longer match the entries.
5. **specimens** — each specimen row's stored manifest must be canonical and hash to
   its ``manifest_digest``, and must match its ``specimen.sealed`` entry (subject,
   tenant, digest); each ``specimen.sealed`` entry must have its specimen row.

**A signed checkpoint** (``--checkpoint FILE``, a C2SP checkpoint the log signed)
replaces the recorded one: step **S** proves the stored tree extends it (an RFC 9162
consistency proof from its size and root to the tree now) and that its last entry is
the one it signed (the entry's leaf, recomputed, is included in the signed root); the
chain's check resumes after that entry. Entries before it are vouched for by the
signature, not re-read (``--full`` re-reads them).

**Checkpoints** (incremental runs). A run that succeeds may record its head as a
checkpoint (``ledger_checkpoints``). An incremental run starts from the latest one
instead of entry 0, after step 0:

0. **checkpoint** — the entry at the checkpoint's index must exist, still carry the
   checkpoint's hash, and still hash to it from its contents. A checkpoint whose entry
   was edited (or re-hashed) fails here; it is never trusted.

Steps 1, 4 and 5 then cover only entries (and specimens sealed) after the checkpoint
(step 4 grows the tree from the stored subtrees the checkpoint's size is made of);
steps 2 and 3 are unchanged (the saved head is compared wherever it lies, reading one
row if it lies before the checkpoint). A checkpoint lives in the database it vouches
for, so an edit before it is caught by the saved head when history was rewritten up to
it, and otherwise only by a full run (no checkpoint): run one regularly.
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa

from ._canonical import canonical_digest, canonical_json, loads
from ._chain import GENESIS_HASH, compute_entry_hash, iter_entry_rows, stored_entry_bytes
from ._errors import CanonicalizationError
from ._records import LedgerPosition, VerifyReport
from ._statements import insert_new, select_entries, select_tip
from ._tree import (
    Frontier,
    beyond,
    consistency_proof,
    first_differing,
    inclusion_proof,
    tree_root,
)
from .certificates.tlog import (
    Checkpoint,
    ProofInvalid,
    hash_leaf,
    verify_consistency,
    verify_inclusion,
)

__all__ = ["latest_checkpoint", "record_checkpoint", "verify_ledger"]

_SEALED = "specimen.sealed"


class _Bad(Exception):
    def __init__(self, index: int | None, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def _canonical_object(text: str) -> dict[str, Any] | None:
    """The parsed object if ``text`` is canonical JSON of an object, else ``None``."""
    try:
        value = loads(text)
        if not isinstance(value, dict) or canonical_json(value) != text.encode():
            return None
    except CanonicalizationError:
        return None
    return value


def verify_ledger(
    conn: sa.Connection,
    saved_head: LedgerPosition | None,
    *,
    checkpoint: LedgerPosition | None = None,
    signed: Checkpoint | None = None,
) -> VerifyReport:
    checked: list[str] = []
    length = 0
    head: LedgerPosition | None = None
    if signed is not None and signed.size > 0:
        checked.append("signed_checkpoint")
        try:
            checkpoint = _check_signed(conn, signed)
        except _Bad as bad:
            return VerifyReport(
                ok=False,
                length=0,
                head=None,
                first_bad_index=bad.index,
                reason=bad.reason,
                checked=tuple(checked),
                verified_from=signed.size,
            )
    start = 0 if checkpoint is None else checkpoint.index + 1
    try:
        if checkpoint is not None:
            checked.append("checkpoint")
            _check_checkpoint(conn, checkpoint)
        checked.append("chain")
        tree = _TreeCheck(conn, start)
        length, head, sealed, saved_hash = _check_chain(conn, saved_head, checkpoint, tree)
        checked.append("tip")
        _check_tip(conn, length, head)
        if saved_head is not None:
            checked.append("saved_head")
            if saved_head.index < start:
                saved_hash = _stored_hash(conn, saved_head.index)
            _check_saved_head(saved_head, length, saved_hash)
        checked.append("tree")
        tree.finish(length)
        checked.append("specimens")
        _check_specimens(conn, sealed, after=start - 1)
    except _Bad as bad:
        return VerifyReport(
            ok=False,
            length=length,
            head=head,
            first_bad_index=bad.index,
            reason=bad.reason,
            checked=tuple(checked),
            verified_from=start,
        )
    return VerifyReport(
        ok=True, length=length, head=head, checked=tuple(checked), verified_from=start
    )


def _stored_hash(conn: sa.Connection, index: int) -> str | None:
    from .tables import EntryRow, table_of

    entries = table_of(EntryRow)
    row = conn.execute(
        sa.select(entries.c.entry_hash).where(entries.c.entry_index == index)
    ).first()
    return None if row is None else str(row[0])


def _check_signed(conn: sa.Connection, signed: Checkpoint) -> LedgerPosition:
    """Step S: the stored tree extends the signed checkpoint (a consistency proof from
    its size and root to the tree now), and its last entry is the one it signed (that
    entry's leaf, recomputed, is included in the signed root). Its position is where
    the chain's check resumes."""
    from .tables import EntryRow, TipRow, table_of

    index = signed.size - 1
    length = int(conn.execute(sa.select(table_of(TipRow).c.length)).scalar_one())
    if signed.size > length:
        raise _Bad(length, "the chain is shorter than the signed checkpoint (tail removed)")
    row = conn.execute(select_entries().where(table_of(EntryRow).c.entry_index == index)).first()
    if row is None:
        raise _Bad(index, "the signed checkpoint's last entry is missing")
    _, kind, subject, body_json, prev_hash, entry_hash, recorded_at = row
    leaf = hash_leaf(stored_entry_bytes(index, kind, subject, body_json, prev_hash, recorded_at))
    try:
        verify_inclusion(
            leaf, index, signed.size, inclusion_proof(conn, index, signed.size), signed.root
        )
        root = tree_root(conn, length)
        proof = consistency_proof(conn, signed.size, length)
        verify_consistency(signed.size, length, signed.root, root, proof)
    except (ProofInvalid, LookupError):
        raise _Bad(index, "the ledger does not extend the signed checkpoint") from None
    return LedgerPosition(index=index, entry_hash=str(entry_hash))


def _check_checkpoint(conn: sa.Connection, checkpoint: LedgerPosition) -> None:
    from .tables import EntryRow, table_of

    row = conn.execute(
        select_entries().where(table_of(EntryRow).c.entry_index == checkpoint.index)
    ).first()
    if row is None:
        raise _Bad(checkpoint.index, "the checkpoint's entry is missing")
    _, kind, subject, body_json, prev_hash, entry_hash, recorded_at = row
    recomputed = compute_entry_hash(
        index=checkpoint.index,
        kind=kind,
        subject=subject,
        body_json=body_json.encode(),
        prev_hash=prev_hash,
        recorded_at=recorded_at,
    )
    if entry_hash != checkpoint.entry_hash or recomputed != entry_hash:
        raise _Bad(checkpoint.index, "entry differs from the verified checkpoint")


class _TreeCheck:
    """The tree grown from the entries as the chain is read, compared with the stored
    one batch by batch; the first difference is kept and reported at step 4."""

    _BATCH = 4096

    def __init__(self, conn: sa.Connection, start: int) -> None:
        self._conn = conn
        self._pending: list[tuple[int, int, bytes]] = []
        self._problem: _Bad | None = None
        try:
            self._frontier: Frontier | None = Frontier.stored(conn, start)
        except LookupError:
            self._frontier = None
            self._problem = _Bad(start, "the Merkle tree lacks a subtree of the verified size")

    def add(self, data: bytes) -> None:
        if self._frontier is None or self._problem is not None:
            return
        self._pending.extend(self._frontier.push(hash_leaf(data)))
        if len(self._pending) >= self._BATCH:
            self._compare()

    def _compare(self) -> None:
        bad = first_differing(self._conn, self._pending)
        self._pending = []
        if bad is not None:
            level, index = bad
            self._problem = _Bad(index << level, "the Merkle tree differs from the entries")

    def finish(self, length: int) -> None:
        if self._problem is None and self._pending:
            self._compare()
        if self._problem is None and beyond(self._conn, length) is not None:
            self._problem = _Bad(length, "the Merkle tree reaches past the chain")
        if self._problem is not None:
            raise self._problem


def _check_chain(
    conn: sa.Connection,
    saved_head: LedgerPosition | None,
    checkpoint: LedgerPosition | None,
    tree: _TreeCheck,
) -> tuple[int, LedgerPosition | None, dict[int, dict[str, Any]], str | None]:
    if checkpoint is None:
        expected, prev = 0, GENESIS_HASH
    else:
        expected, prev = checkpoint.index + 1, checkpoint.entry_hash
    sealed: dict[int, dict[str, Any]] = {}
    saved_hash: str | None = None
    for row in iter_entry_rows(conn, after=expected - 1):
        index, kind, subject, body_json, prev_hash, entry_hash, recorded_at = row
        if int(index) != expected:
            raise _Bad(expected, "missing entry (gap in the index sequence)")
        if prev_hash != prev:
            raise _Bad(expected, "link to the previous entry is broken")
        body = _canonical_object(body_json)
        if body is None:
            raise _Bad(expected, "entry body is not canonical JSON of an object")
        data = stored_entry_bytes(expected, kind, subject, body_json, prev_hash, recorded_at)
        if "sha256:" + hashlib.sha256(data).hexdigest() != entry_hash:
            raise _Bad(expected, "entry hash does not match the entry's contents")
        tree.add(data)
        if kind == _SEALED:
            sealed[expected] = {"subject": subject, "body": body}
        if saved_head is not None and saved_head.index == expected:
            saved_hash = entry_hash
        prev = entry_hash
        expected += 1
    head = LedgerPosition(index=expected - 1, entry_hash=prev) if expected else None
    return expected, head, sealed, saved_hash


def _check_tip(conn: sa.Connection, length: int, head: LedgerPosition | None) -> None:
    tip = conn.execute(select_tip()).first()
    if tip is None:
        raise _Bad(None, "the chain tip row is missing")
    tip_length, tip_hash = int(tip[0]), str(tip[1])
    if tip_length > length:
        raise _Bad(length, "chain is shorter than its tip row (tail removed)")
    if tip_length < length:
        raise _Bad(tip_length, "entries exist beyond the tip row")
    if tip_hash != (head.entry_hash if head else GENESIS_HASH):
        raise _Bad(head.index if head else None, "tip row does not match the last entry")


def _check_saved_head(saved: LedgerPosition, length: int, saved_hash: str | None) -> None:
    if saved.index >= length:
        raise _Bad(length, "chain is shorter than the saved head (tail removed)")
    if saved_hash != saved.entry_hash:
        raise _Bad(saved.index, "entry differs from the saved head (history rewritten)")


def _check_specimens(conn: sa.Connection, sealed: dict[int, dict[str, Any]], *, after: int) -> None:
    """Specimens sealed after index ``after`` against the sealed entries read."""
    from .tables import SpecimenRow, table_of

    problems: list[tuple[int, str]] = []
    seen: set[int] = set()
    specimens = table_of(SpecimenRow)
    rows = conn.execute(
        sa.select(
            specimens.c.id,
            specimens.c.tenant_id,
            specimens.c.manifest_json,
            specimens.c.manifest_digest,
            specimens.c.sealed_index,
        )
        .where(specimens.c.sealed_index > after)
        .order_by(specimens.c.sealed_index)
    )
    for specimen_id, tenant_id, manifest_json, digest, sealed_index in rows:
        index = int(sealed_index)
        seen.add(index)
        manifest = _canonical_object(manifest_json)
        if manifest is None or canonical_digest(manifest) != digest:
            problems.append((index, "specimen manifest does not match its digest"))
            continue
        entry = sealed.get(index)
        body = entry["body"] if entry else {}
        if (
            entry is None
            or entry["subject"] != specimen_id
            or body.get("specimen_id") != specimen_id
            or body.get("tenant_id") != tenant_id
            or body.get("manifest_digest") != digest
        ):
            problems.append((index, "specimen row does not match its sealed entry"))
    for index in sealed.keys() - seen:
        problems.append((index, "sealed entry has no specimen row"))
    if problems:
        index, reason = min(problems)
        raise _Bad(index, reason)


def latest_checkpoint(conn: sa.Connection) -> LedgerPosition | None:
    from .tables import CheckpointRow, table_of

    checkpoints = table_of(CheckpointRow)
    row = conn.execute(
        sa.select(checkpoints.c.entry_index, checkpoints.c.entry_hash)
        .order_by(checkpoints.c.entry_index.desc())
        .limit(1)
    ).first()
    return None if row is None else LedgerPosition(index=int(row[0]), entry_hash=str(row[1]))


def record_checkpoint(conn: sa.Connection, position: LedgerPosition, *, verified_at: str) -> None:
    """Record ``position`` as verified (once per index: a later run of the same head
    keeps the first record; the index is the table's only unique key)."""
    from .tables import CheckpointRow, table_of

    conn.execute(
        insert_new(conn, table_of(CheckpointRow)).values(
            entry_index=position.index, entry_hash=position.entry_hash, verified_at=verified_at
        )
    )
