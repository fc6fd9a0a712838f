"""The enclave's HTTP service (FastAPI): analysts list specimens and policies, request
audits, follow them, and download and verify certificates. Metadata only.

``create_app(runtime_factory, clock=...)`` builds the app; ``replay-enclave serve``
runs it with uvicorn. The OpenAPI document is at ``/openapi.json``.
"""

from ._app import API_PREFIX, create_app
from ._errors import ServiceError
from ._gate import Limits

__all__ = ["API_PREFIX", "Limits", "ServiceError", "create_app"]
