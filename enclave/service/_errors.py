"""The service's error edge: every failure is ``{"error": {"code", "message"}}`` JSON.

Messages come from our own error types (written never to carry content) or are fixed
text here; request input is never echoed — FastAPI's validation handler, which quotes
the offending input, is replaced — and no traceback ever reaches a response.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger import Conflict, LedgerError, NotFound
from ledger.certificates import BadCertificateInput, CertificateError

from .._errors import BadInput, EnclaveError, InfrastructureError, Refused
from ..governance import BudgetExhausted
from ._models import ErrorBody

__all__ = ["ERROR_RESPONSES", "ServiceError", "error_response", "install_error_handlers"]

log = logging.getLogger("enclave.service")

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (400, "Malformed request (semantics)"),
        (401, "Missing or invalid bearer token"),
        (403, "Refused: the code names the unmet condition"),
        (404, "No such resource"),
        (409, "Conflicts with the recorded state"),
        (422, "Malformed request (shape)"),
        (429, "Disclosure budget exhausted"),
        (503, "A dependency is unavailable"),
    )
}

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
}


class ServiceError(Exception):
    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def _from_enclave(exc: EnclaveError) -> JSONResponse:
    if isinstance(exc, BudgetExhausted):
        return error_response(429, exc.code, str(exc), {"Retry-After": str(exc.retry_after)})
    if isinstance(exc, Refused):
        return error_response(403, exc.code, str(exc))
    if isinstance(exc, BadInput):
        return error_response(400, exc.code, str(exc))
    if isinstance(exc, InfrastructureError):
        log.warning("infrastructure failure type=%s", type(exc).__name__)
        return error_response(503, exc.code, "a dependency is unavailable; retry later")
    log.warning("enclave failure code=%s", exc.code)
    return error_response(503, exc.code, "the enclave could not complete the request")


def _from_certificate(exc: CertificateError) -> JSONResponse:
    # answered as the enclave's own errors were: bad input, or a request not completed
    if isinstance(exc, BadCertificateInput):
        return error_response(400, exc.code, str(exc))
    log.warning("enclave failure code=%s", exc.code)
    return error_response(503, exc.code, "the enclave could not complete the request")


def _from_ledger(exc: LedgerError) -> JSONResponse:
    if isinstance(exc, CertificateError):
        return _from_certificate(exc)
    if isinstance(exc, NotFound):
        return error_response(404, "not_found", "no such resource")
    if isinstance(exc, Conflict):
        return error_response(409, "conflict", "the request conflicts with the recorded state")
    log.warning("ledger failure type=%s", type(exc).__name__)
    return error_response(503, "ledger_unavailable", "the ledger is unavailable; retry later")


def install_error_handlers(app: FastAPI) -> None:
    async def service_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    async def enclave_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, EnclaveError)
        return _from_enclave(exc)

    async def ledger_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, LedgerError)
        return _from_ledger(exc)

    async def validation_error(_: Request, exc: Exception) -> JSONResponse:
        # The default handler returns the errors with their "input": never do that.
        assert isinstance(exc, RequestValidationError)
        places = sorted(
            {str(part) for err in exc.errors() for part in err.get("loc", ())[:1]}
            & {"body", "query", "path", "header"}
        )
        where = " in " + ", ".join(places) if places else ""
        return error_response(422, "invalid_request", f"the request is malformed{where}")

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        headers = dict(exc.headers) if exc.headers else None
        return error_response(exc.status_code, code, code.replace("_", " "), headers)

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(EnclaveError, enclave_error)
    app.add_exception_handler(LedgerError, ledger_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
