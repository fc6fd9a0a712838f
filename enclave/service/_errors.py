"""The service's error edge: every failure is ``{"error": {"code", "message"}}`` JSON.

Messages come from our own error types (written never to carry content) or are fixed
text here; request input is never echoed — FastAPI's validation handler, which quotes
the offending input, is replaced — and no traceback ever reaches a response. An enclave
or ledger error's class gives the status, the code and, where its own text is meant for
an operator, the fixed text shown instead (``ledger.ErrorOutcome``).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger import LedgerError, http_status_for

from .._errors import EnclaveError
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


def _from_error(exc: EnclaveError | LedgerError) -> JSONResponse:
    """The answer an enclave or ledger error stands for, as its class says."""
    status = http_status_for(exc)
    if status >= 500:  # the caller cannot act on it: the operator reads the log
        log.warning("failure type=%s code=%s", type(exc).__name__, exc.code)
    text = exc.public_text if exc.public_text is not None else str(exc)
    return error_response(status, exc.code, text, exc.http_headers())


def install_error_handlers(app: FastAPI) -> None:
    async def service_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    async def outcome_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, EnclaveError | LedgerError)
        return _from_error(exc)

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
    app.add_exception_handler(EnclaveError, outcome_error)
    app.add_exception_handler(LedgerError, outcome_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
