"""Routes for the evidence ledger's head, verification and log key (metadata only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..governance import Action, Resource
from ._auth import CurrentAnalyst, State, require
from ._errors import ERROR_RESPONSES
from ._models import LedgerHead, LedgerVerify, LogKeyModel

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
    log = LogKey.of(state.runtime.home)
    return {"origin": log.origin, "verifier_key": log.verifier.encode()}


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
    report = state.runtime.ledger.verify(incremental=not full, record=True)
    return {
        "ok": report.ok,
        "length": report.length,
        "first_bad_index": report.first_bad_index,
        "reason": report.reason,
        "verified_from": report.verified_from,
    }
