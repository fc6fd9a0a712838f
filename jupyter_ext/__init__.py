"""The analyst front end of Replay Enclave: a client of the enclave service only.

It holds no decrypt rights and never receives plaintext: a Jupyter server extension
(``/enclave/api/...`` forwarded to the service's known routes under the analyst's
credential), an ipywidgets panel, and the ``%enclave`` magics.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._client import EnclaveClient
from ._errors import (
    BadResponse,
    EnclaveClientError,
    NotConfigured,
    ServiceRefused,
    ServiceUnavailable,
)
from ._offline import verify_file
from ._wire import AuditRequestBody, AuditStatus, VerifyCheck, VerifyReport

if TYPE_CHECKING:
    from ._magics import load_ipython_extension
    from ._panel import EnclavePanel

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


# The widget stack (ipywidgets, IPython) is imported on first use, so the server
# extension loads in a Jupyter server installed without the [jupyter] extra.
_WIDGET_NAMES = {"EnclavePanel": "._panel", "load_ipython_extension": "._magics"}


def __getattr__(name: str) -> Any:
    if name not in _WIDGET_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WIDGET_NAMES[name], __name__), name)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from ._app import EnclaveExtension

    return [{"module": "jupyter_ext", "app": EnclaveExtension}]
