"""The log's signed checkpoints as the command line and the service hand them out.

Signing one (``issue_checkpoint``) proves the ledger extends the last checkpoint signed,
signs the tree with the log key and asks the configured witnesses to cosign it.
Reading one back (``read_checkpoint``) accepts only a note this log's key signed for
this log's origin, so ``ledger verify`` can resume from it. ``verified_range`` says in
words which entries a verification read and which the checkpoint vouched for.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import BadInput

if TYPE_CHECKING:
    from ledger import SignedCheckpoint
    from ledger.certificates.tlog import Checkpoint

    from ._runtime import Runtime

__all__ = ["IssuedCheckpoint", "issue_checkpoint", "read_checkpoint", "verified_range"]

MAX_NOTE_BYTES = 16_384  # a checkpoint and a few dozen cosignatures


@dataclass(frozen=True)
class IssuedCheckpoint:
    signed: SignedCheckpoint
    note: str  # the signed note with the cosignatures kept
    verifier_key: str
    witnesses: dict[str, str]  # each witness's name and what it said

    def to_dict(self) -> dict[str, Any]:
        checkpoint = self.signed.checkpoint
        return {
            "origin": checkpoint.origin,
            "tree_size": checkpoint.size,
            "root": base64.b64encode(checkpoint.root).decode(),
            "extends": self.signed.previous_size,
            "verifier_key": self.verifier_key,
            "note": self.note,
            "witnesses": self.witnesses,
        }


def issue_checkpoint(runtime: Runtime) -> IssuedCheckpoint:
    """Sign the tree as it is now, after proving it extends the last checkpoint signed
    (``Conflict`` otherwise), and collect the witnesses' cosignatures."""
    from ._log_key import LogKey
    from ._witnesses import configured_witnesses, request_cosignatures

    witnesses = configured_witnesses(runtime.home)  # refused before anything is signed
    log = LogKey.of(runtime)
    signed = runtime.ledger.sign_checkpoint(origin=log.origin, signer=log.verifier, sign=log.sign)
    said, note = request_cosignatures(
        runtime.ledger, log, witnesses, signed.checkpoint.size, signed.note
    )
    return IssuedCheckpoint(
        signed=signed, note=note, verifier_key=log.verifier.encode(), witnesses=said
    )


def read_checkpoint(runtime: Runtime, note: str) -> Checkpoint:
    """The checkpoint in ``note``, a signed note this log's key signed for its origin."""
    from ledger.certificates.tlog import NoteInvalid, open_note, parse_checkpoint

    from ._log_key import LogKey

    if len(note.encode("utf-8", "surrogatepass")) > MAX_NOTE_BYTES:
        raise BadInput("the checkpoint is too long to be a signed note")
    log = LogKey.of(runtime, create=False)
    try:
        signed = parse_checkpoint(open_note(note, [log.verifier])[0])
    except NoteInvalid:
        raise BadInput("the checkpoint is not a note this log signed") from None
    if signed.origin != log.origin:
        raise BadInput("the checkpoint is another log's")
    return signed


def verified_range(length: int, start: int, signed: bool = False) -> str:
    """Which entries a verification read, and that those before its checkpoint were
    not: a resumed run trusts the checkpoint for them (an edit there shows only when
    every entry is checked)."""
    if length == 0:
        return "the ledger is empty"
    if start == 0:
        return f"all {length} entries (0-{length - 1}) checked, head matches"
    earlier = (
        f"entries 0-{start - 1} are proven by the signed checkpoint of {start} entries "
        "(a consistency proof to the tree now) and re-read only with --full"
        if signed
        else f"entries 0-{start - 1} were verified at an earlier checkpoint and are "
        "re-checked only with --full"
    )
    if start >= length:
        return f"no entries after the checkpoint, head matches; {earlier}"
    span = f"entry {start}" if start == length - 1 else f"entries {start}-{length - 1}"
    return f"{span} checked, head matches; {earlier}"
