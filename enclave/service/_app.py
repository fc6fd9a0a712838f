"""The enclave service: a FastAPI app over one runtime, under ``/api/v1``.

``create_app(runtime_factory, clock=...)`` builds it; the runtime is opened on first
use and closed at shutdown. Every route but ``/openapi.json`` needs a bearer token;
every route that touches a resource asks Cedar. Errors are ``{"error": {"code",
"message"}}``, never a traceback, never the request's own input.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime

from fastapi import FastAPI

from .._runtime import Runtime, utc_now
from ..governance import AccessPolicy
from ._audits import router as audits_router
from ._catalog import router as catalog_router
from ._errors import install_error_handlers
from ._gate import Limits, RequestGate
from ._grants import INTERNAL_PREFIX
from ._grants import router as grants_router
from ._job_secrets import router as job_secrets_router
from ._ledger_routes import router as ledger_router
from ._middleware import GuardMiddleware
from ._reports import router as reports_router
from ._state import ServiceState, bound_request_threads

__all__ = ["API_PREFIX", "create_app"]

API_PREFIX = "/api/v1"


def create_app(
    runtime_factory: Callable[[], Runtime],
    *,
    clock: Callable[[], datetime] = utc_now,
    access: AccessPolicy | None = None,
    limits: Limits | None = None,
) -> FastAPI:
    """The service app. ``access`` defaults to the Cedar policies in ``policies/access``;
    ``limits`` bound request headers and bodies (``Limits()``: 16 KiB and 64 KiB)."""
    state = ServiceState(
        runtime_factory=runtime_factory, clock=clock, access=access or AccessPolicy.load()
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        bound_request_threads()
        try:
            yield
        finally:
            state.close()

    app = FastAPI(
        title="Replay Enclave",
        version="1",
        summary="Governed replay audits of sealed agent runs. Metadata and certificates only.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # a redirect to the slash-less path would be built from the Host header (input)
        redirect_slashes=False,
    )
    app.state.enclave = state
    install_error_handlers(app)
    # the last added runs first: the guard logs every answer, the gate's included
    app.add_middleware(RequestGate, state=state, limits=limits or Limits(), prefix=API_PREFIX)
    app.add_middleware(GuardMiddleware)
    for router in (catalog_router, audits_router, reports_router, ledger_router):
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(grants_router, prefix=INTERNAL_PREFIX)  # workers, not analysts
    app.include_router(job_secrets_router, prefix=INTERNAL_PREFIX)
    return app
