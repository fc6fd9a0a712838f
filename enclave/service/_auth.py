"""Who is asking (bearer token -> analyst) and may they (Cedar)."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ..governance import Action, Analyst, Resource, authenticate
from ._errors import ServiceError
from ._gate import ANALYST_KEY
from ._state import ServiceState, state_of

__all__ = ["CurrentAnalyst", "State", "current_analyst", "require"]

log = logging.getLogger("enclave.service")

_bearer = HTTPBearer(
    auto_error=False, description="An analyst token from `replay-enclave analyst add`."
)

State = Annotated[ServiceState, Depends(state_of)]


async def current_analyst(
    request: Request,
    state: State,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Analyst:
    # the request gate authenticated the token before the body was read (so this, on
    # the event loop, costs no thread hop); a route outside the gate's prefix asks here
    gated = request.scope.get("state", {}).get(ANALYST_KEY)
    analyst = gated if isinstance(gated, Analyst) else None
    if analyst is None and credentials is not None and credentials.scheme.lower() == "bearer":
        token = credentials.credentials
        analyst = await run_in_threadpool(lambda: authenticate(state.runtime, token))
    if analyst is None:
        raise ServiceError(
            401,
            "unauthenticated",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return analyst


CurrentAnalyst = Annotated[Analyst, Depends(current_analyst)]


def require(
    state: ServiceState,
    analyst: Analyst,
    action: Action,
    resource: Resource,
    *,
    purpose: str = "",
) -> None:
    decision = state.access.authorize(analyst, action, resource, purpose=purpose, now=state.clock())
    if not decision.allowed:
        log.info(
            "access denied analyst=%s action=%s code=%s", analyst.name, action.value, decision.code
        )
        raise ServiceError(403, decision.code, "access denied by policy")
