"""The one error root of the analyst front end, branched by who is at fault.

* ``ServiceRefused``     — the enclave service answered with a refusal (4xx): its status,
                           code and message are carried as they are.
* ``ServiceUnavailable`` — the service could not be reached or timed out.
* ``BadResponse``        — the service answered something that is not its contract.
* ``NotConfigured``      — no service URL or analyst credential is configured.
* ``NotARoute``          — a request this front end never sends (it is refused before
                           anything leaves; also a ``ValueError``).

Messages carry metadata only (status, code, route name); never a request body.
"""

from __future__ import annotations

__all__ = [
    "NOT_JSON",
    "BadResponse",
    "EnclaveClientError",
    "NotARoute",
    "NotConfigured",
    "ServiceRefused",
    "ServiceUnavailable",
]


# what ``json.loads`` raises on text it cannot read: ValueError (JSONDecodeError,
# UnicodeDecodeError) and RecursionError (nesting deeper than the parser's stack)
NOT_JSON = (ValueError, RecursionError)


class EnclaveClientError(Exception):
    """Root of every error raised by ``jupyter_ext``."""

    code = "client_error"


class ServiceRefused(EnclaveClientError):
    """A 4xx answer from the enclave service (denial, bad input, budget...)."""

    def __init__(self, *, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ServiceUnavailable(EnclaveClientError):
    """The enclave service is down, unreachable, timed out or failed (5xx)."""

    code = "service_unavailable"


class BadResponse(EnclaveClientError):
    """The service's answer does not follow its contract."""

    code = "bad_response"


class NotConfigured(EnclaveClientError):
    """No service URL or no analyst credential."""

    code = "not_configured"


class NotARoute(EnclaveClientError, ValueError):
    """A method and path that are not one of the service's known routes."""

    code = "not_a_route"
