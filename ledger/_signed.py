"""Signed checkpoints: the log's state as a C2SP ``tlog-checkpoint`` signed note.

A checkpoint is signed only after the tree it names is proven to extend the latest one
signed before it (RFC 9162 consistency proof, verified against that checkpoint's own
signed root, read back from its note): a ledger whose history was rewritten — entries,
chain and tree recomputed alike — can no longer be signed, and anyone holding an
earlier checkpoint can check a later one with the same proof.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from ._errors import Conflict
from ._tree import consistency_proof, inclusion_proof, tree_root
from .certificates.tlog import (
    Checkpoint,
    NoteInvalid,
    NoteVerifier,
    ProofInvalid,
    TlogProof,
    checkpoint_text,
    hash_leaf,
    open_note,
    parse_checkpoint,
    sign_note,
    verify_consistency,
    verify_inclusion,
)

if TYPE_CHECKING:
    from ._records import EntryRecord

__all__ = [
    "SignedCheckpoint",
    "add_cosignatures",
    "latest_signed",
    "prove_entries",
    "sign_checkpoint",
]


@dataclass(frozen=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    note: str
    previous_size: int | None  # the checkpoint it was proven to extend


def _table() -> sa.Table:
    from .tables import SignedCheckpointRow, table_of

    return table_of(SignedCheckpointRow)


def latest_signed(conn: sa.Connection, verifier: NoteVerifier) -> Checkpoint | None:
    """The latest checkpoint signed, read back from its note (which must verify)."""
    table = _table()
    row = conn.execute(sa.select(table.c.note).order_by(table.c.tree_size.desc()).limit(1)).first()
    if row is None:
        return None
    try:
        text, _ = open_note(str(row[0]), [verifier])
        return parse_checkpoint(text)
    except NoteInvalid:
        raise Conflict("the latest signed checkpoint does not verify with the log key") from None


def sign_checkpoint(
    conn: sa.Connection,
    *,
    origin: str,
    signer: NoteVerifier,
    sign: Callable[[bytes], bytes],
    signed_at: str,
) -> SignedCheckpoint:
    """Sign the tree as it is in ``conn``'s snapshot, after proving it extends the
    latest signed checkpoint; ``Conflict`` if it does not (nothing is signed)."""
    from .tables import TipRow, table_of

    size = int(conn.execute(sa.select(table_of(TipRow).c.length)).scalar_one())
    root = tree_root(conn, size)
    previous = latest_signed(conn, signer)
    if previous is not None:
        if previous.origin != origin or previous.size > size:
            raise Conflict("the ledger does not extend its latest signed checkpoint")
        try:  # every tree extends the empty one: no proof from size 0
            if previous.size > 0:
                proof = consistency_proof(conn, previous.size, size)
                verify_consistency(previous.size, size, previous.root, root, proof)
        except (ProofInvalid, LookupError):
            raise Conflict("the ledger does not extend its latest signed checkpoint") from None
        if previous.size == size:
            note = _note_at(conn, size)
            return SignedCheckpoint(previous, note, previous_size=size)
    checkpoint = Checkpoint(origin=origin, size=size, root=root)
    note = sign_note(checkpoint_text(checkpoint), signer, sign)
    conn.execute(
        sa.insert(_table()).values(tree_size=size, root=root, note=note, signed_at=signed_at)
    )
    return SignedCheckpoint(checkpoint, note, None if previous is None else previous.size)


def _note_at(conn: sa.Connection, size: int) -> str:
    table = _table()
    return str(conn.execute(sa.select(table.c.note).where(table.c.tree_size == size)).scalar_one())


def prove_entries(
    conn: sa.Connection,
    entries: Sequence[EntryRecord],
    *,
    origin: str,
    signer: NoteVerifier,
    sign: Callable[[bytes], bytes],
    signed_at: str,
) -> list[tuple[bytes, TlogProof]]:
    """Each entry's canonical bytes and C2SP proof against one signed checkpoint: the
    latest signed if it covers them all, else a new one (``sign_checkpoint``). Every
    proof is checked before it is returned: a tree that no longer matches its entries
    yields ``Conflict``, never a proof that will not verify."""
    from ._chain import entry_canonical

    latest = latest_signed(conn, signer)
    needed = max(e.index for e in entries) + 1
    if latest is not None and latest.origin == origin and latest.size >= needed:
        checkpoint, note = latest, _note_at(conn, latest.size)
    else:
        signed = sign_checkpoint(conn, origin=origin, signer=signer, sign=sign, signed_at=signed_at)
        checkpoint, note = signed.checkpoint, signed.note
    proven = []
    for entry in entries:
        data = entry_canonical(entry)
        hashes = inclusion_proof(conn, entry.index, checkpoint.size)
        try:
            verify_inclusion(hash_leaf(data), entry.index, checkpoint.size, hashes, checkpoint.root)
        except ProofInvalid:
            raise Conflict("the ledger's tree does not hold its entries as signed") from None
        proven.append((data, TlogProof(index=entry.index, hashes=tuple(hashes), note=note)))
    return proven


def add_cosignatures(conn: sa.Connection, size: int, lines: str, signer: NoteVerifier) -> str:
    """Append signature lines (witnesses' cosignatures) to the note signed at ``size``;
    the note must still open with the log's key (its text and signature untouched)."""
    note = _note_at(conn, size)
    extended = note + lines
    try:
        if (
            not lines.endswith("\n")
            or open_note(extended, [signer])[0] != open_note(note, [signer])[0]
        ):
            raise NoteInvalid("the text changed")
    except NoteInvalid:
        raise Conflict("the cosignatures are not signature lines of this note") from None
    table = _table()
    conn.execute(sa.update(table).where(table.c.tree_size == size).values(note=extended))
    return extended
