"""Routes for the evidence ledger's head and verification (metadata only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..governance import Action, Resource
from ._auth import CurrentAnalyst, State, require
from ._errors import ERROR_RESPONSES
from ._models import LedgerHead, LedgerVerify

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
    "/ledger/verify",
    response_model=LedgerVerify,
    summary="Verify the whole hash chain against the saved head",
)
def verify(state: State, analyst: CurrentAnalyst) -> dict[str, Any]:
    require(state, analyst, Action.READ_LEDGER, Resource.ledger())
    report = state.runtime.ledger.verify()
    return {
        "ok": report.ok,
        "length": report.length,
        "first_bad_index": report.first_bad_index,
        "reason": report.reason,
    }
