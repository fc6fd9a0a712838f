"""Signed checkpoints: the log's state as a C2SP ``tlog-checkpoint`` signed note.

A checkpoint is signed only after the tree it names is proven to extend the latest one
signed before it (RFC 9162 consistency proof, verified against that checkpoint's own
signed root, read back from its note): a ledger whose history was rewritten — entries,
chain and tree recomputed alike — can no longer be signed, and anyone holding an
earlier checkpoint can check a later one with the same proof.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from ._errors import Conflict
from ._tree import consistency_proof, tree_root
from .certificates.tlog import (
    Checkpoint,
    NoteInvalid,
    NoteVerifier,
    ProofInvalid,
    checkpoint_text,
    open_note,
    parse_checkpoint,
    sign_note,
    verify_consistency,
)

__all__ = ["SignedCheckpoint", "latest_signed", "sign_checkpoint"]


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
