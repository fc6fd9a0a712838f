"""The enclave's HTTP service (FastAPI): analysts list specimens and policies, request
audits, follow them, and download and verify certificates. Metadata only.

``create_app(runtime_factory, clock=...)`` builds the app; ``replay-enclave serve``
runs it with uvicorn (``NO_DELAY_PROTOCOL``, the environment ``ENV_MAX_BODY`` names).
Replay workers in Vault mode hold a worker token (``add_worker``); the service mints
their grants. The OpenAPI document is at ``/openapi.json``.

Every name is imported on first use: the command line imports this package and must
not pay for FastAPI in commands that do not serve.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._app import API_PREFIX as API_PREFIX
    from ._app import create_app as create_app
    from ._catalog import cuts_of as cuts_of
    from ._errors import ServiceError as ServiceError
    from ._gate import Limits as Limits
    from ._grant_records import add_worker as add_worker
    from ._grant_records import revoke_worker as revoke_worker
    from ._grant_records import worker_name_of as worker_name_of
    from ._http import NO_DELAY_PROTOCOL as NO_DELAY_PROTOCOL
    from ._serve import ENV_MAX_BODY as ENV_MAX_BODY
    from ._serve import LOG_FORMAT as LOG_FORMAT
    from ._state import LIST_THREADS as LIST_THREADS
    from ._state import REQUEST_THREADS as REQUEST_THREADS
    from ._views import ADMISSIBLE as ADMISSIBLE
    from ._views import expected_auditability as expected_auditability
    from ._views import specimen_detail as specimen_detail

_FRONT = {
    "API_PREFIX": "._app",
    "create_app": "._app",
    "ServiceError": "._errors",
    "Limits": "._gate",
    "NO_DELAY_PROTOCOL": "._http",
    "ENV_MAX_BODY": "._serve",
    "LOG_FORMAT": "._serve",
    "LIST_THREADS": "._state",
    "REQUEST_THREADS": "._state",
    "add_worker": "._grant_records",
    "revoke_worker": "._grant_records",
    "worker_name_of": "._grant_records",
    "ADMISSIBLE": "._views",
    "expected_auditability": "._views",
    "specimen_detail": "._views",
    "cuts_of": "._catalog",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
