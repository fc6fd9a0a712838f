"""Routes for the evidence ledger's head, verification and log key (metadata only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from .._checkpoints import issue_checkpoint, read_checkpoint, verified_range
from ..governance import Action, Resource
from ._auth import CurrentAnalyst, State, require
from ._errors import ERROR_RESPONSES
from ._models import CheckpointModel, LedgerHead, LedgerVerify, LedgerVerifyBody, LogKeyModel

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)


@router.get("/ledger/head", response_model=LedgerHead, summary="The chain head: index and hash")
def head(state: State, analyst: CurrentAnalyst) -> dict[str, Any]:
    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    position = state.runtime.ledger.head()
    if position is None:
        return {"index": None, "hash": None}
    return {"index": position.index, "hash": position.entry_hash}


@router.get(
    "/ledger/log-key",
    response_model=LogKeyModel,
    summary="The log's verifier key: what a bundle's checkpoint must be signed by",
)
def log_key(state: State, analyst: CurrentAnalyst) -> dict[str, Any]:
    from .._log_key import LogKey

    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    log = LogKey.of(state.runtime)
    return {"origin": log.origin, "verifier_key": log.verifier.encode()}


@router.post(
    "/ledger/checkpoint",
    response_model=CheckpointModel,
    summary="Sign the Merkle tree as it is now as a C2SP checkpoint, proven to extend the last",
)
def checkpoint(state: State, analyst: CurrentAnalyst) -> dict[str, Any]:
    """An operator action: proves the ledger extends the last checkpoint signed (409
    if it does not: history was rewritten), signs the tree with the log key and asks
    the configured witnesses to cosign it. The note is what ``verify`` resumes from."""
    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    return issue_checkpoint(state.runtime).to_dict()


@router.get(
    "/ledger/verify",
    response_model=LedgerVerify,
    summary="Verify the hash chain against the saved head, from the last checkpoint",
)
def verify(
    state: State,
    analyst: CurrentAnalyst,
    full: Annotated[bool, Query(description="Check every entry, trusting no checkpoint.")] = False,
) -> dict[str, Any]:
    """An operator action: checks the entries after the last verified checkpoint (all of
    them with ``full``) and records the head it reached as the next checkpoint."""
    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    return _verified(state, incremental=not full, signed=None)


@router.post(
    "/ledger/verify",
    response_model=LedgerVerify,
    summary="Prove the ledger extends a signed checkpoint and check the entries after it",
)
def verify_from(state: State, analyst: CurrentAnalyst, body: LedgerVerifyBody) -> dict[str, Any]:
    """A checkpoint this log signed (``POST /ledger/checkpoint``) stands in for the
    entries it covers: a consistency proof from it to the tree now, then every later
    entry re-read. A note the log's key did not sign is refused (400)."""
    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    signed = read_checkpoint(state.runtime, body.checkpoint)
    return _verified(state, incremental=True, signed=signed)


def _verified(state: Any, *, incremental: bool, signed: Any) -> dict[str, Any]:
    report = state.runtime.ledger.verify(incremental=incremental, record=True, signed=signed)
    proved = verified_range(report.length, report.verified_from, signed is not None)
    return {
        "ok": report.ok,
        "length": report.length,
        "first_bad_index": report.first_bad_index,
        "reason": report.reason,
        "verified_from": report.verified_from,
        "signed_checkpoint": None if signed is None else signed.size,
        "proved": proved if report.ok else None,
    }
