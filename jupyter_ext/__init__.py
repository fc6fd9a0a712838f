"""The analyst front end of Replay Enclave: a client of the enclave service only.

It holds no decrypt rights and never receives plaintext: a Jupyter server extension
(``/enclave/api/...`` forwarded to the service's known routes under the analyst's
credential), an ipywidgets panel, and the ``%enclave`` magics.
"""

from __future__ import annotations

from typing import Any

from ._client import EnclaveClient
from ._errors import (
    BadResponse,
    EnclaveClientError,
    NotConfigured,
    ServiceRefused,
    ServiceUnavailable,
)
from ._magics import load_ipython_extension
from ._offline import verify_file
from ._panel import EnclavePanel
from ._wire import AuditRequestBody, AuditStatus, VerifyCheck, VerifyReport

__all__ = [
    "AuditRequestBody",
    "AuditStatus",
    "BadResponse",
    "EnclaveClient",
    "EnclaveClientError",
    "EnclavePanel",
    "NotConfigured",
    "ServiceRefused",
    "ServiceUnavailable",
    "VerifyCheck",
    "VerifyReport",
    "_jupyter_server_extension_points",
    "load_ipython_extension",
    "verify_file",
]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from ._app import EnclaveExtension

    return [{"module": "jupyter_ext", "app": EnclaveExtension}]
