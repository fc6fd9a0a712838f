"""The analyst front end of Replay Enclave: a client of the enclave service only.

It holds no decrypt rights and never receives plaintext: a Jupyter server extension
(``/enclave/api/...`` forwarded to the service's known routes under the analyst's
credential), an ipywidgets panel, and the ``%enclave`` magics. Besides those, the front
names the pieces they are built from (the request form, the renderers, the route table,
the offline verifier, the release report's shape), so they can be checked one by one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import BadResponse as BadResponse
from ._errors import EnclaveClientError as EnclaveClientError
from ._errors import NotConfigured as NotConfigured
from ._errors import ServiceRefused as ServiceRefused
from ._errors import ServiceUnavailable as ServiceUnavailable

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._client import EnclaveClient as EnclaveClient
    from ._form import REVISION as REVISION
    from ._form import build_body as build_body
    from ._form import cut_options as cut_options
    from ._form import parse_tolerances as parse_tolerances
    from ._form import policy_options as policy_options
    from ._histogram import binned_histogram_svg as binned_histogram_svg
    from ._histogram import histogram_svg as histogram_svg
    from ._magics import EnclaveMagics as EnclaveMagics
    from ._magics import audit_body as audit_body
    from ._magics import load_ipython_extension as load_ipython_extension
    from ._magics import magic_parser as magic_parser
    from ._offline import verify_envelope_offline as verify_envelope_offline
    from ._offline import verify_file as verify_file
    from ._panel import EnclavePanel as EnclavePanel
    from ._render import certificate_html as certificate_html
    from ._render import certificate_text as certificate_text
    from ._render import error_html as error_html
    from ._render import specimens_html as specimens_html
    from ._render import verify_html as verify_html
    from ._report_shape import LABELS as LABELS
    from ._report_shape import REASONS as REASONS
    from ._report_shape import REPORT_TYPE as REPORT_TYPE
    from ._report_shape import REPORT_TYPE_V1 as REPORT_TYPE_V1
    from ._report_shape import report_problems as report_problems
    from ._report_shape import selection_digest as selection_digest
    from ._routes import ROUTES as ROUTES
    from ._routes import clean_query as clean_query
    from ._routes import match_route as match_route
    from ._verify_handler import MAX_ENVELOPE_BYTES as MAX_ENVELOPE_BYTES
    from ._wire import AuditRequestBody as AuditRequestBody
    from ._wire import AuditStatus as AuditStatus
    from ._wire import VerifyCheck as VerifyCheck
    from ._wire import VerifyReport as VerifyReport

# Imported on first use: ``import jupyter_ext`` stays cheap, and the server extension
# loads in a Jupyter server installed without the [jupyter] extra (ipywidgets, IPython).
_FRONT = {
    "EnclaveClient": "._client",
    "REVISION": "._form",
    "build_body": "._form",
    "cut_options": "._form",
    "parse_tolerances": "._form",
    "policy_options": "._form",
    "binned_histogram_svg": "._histogram",
    "histogram_svg": "._histogram",
    "EnclaveMagics": "._magics",
    "audit_body": "._magics",
    "load_ipython_extension": "._magics",
    "magic_parser": "._magics",
    "verify_envelope_offline": "._offline",
    "verify_file": "._offline",
    "EnclavePanel": "._panel",
    "certificate_html": "._render",
    "certificate_text": "._render",
    "error_html": "._render",
    "specimens_html": "._render",
    "verify_html": "._render",
    "LABELS": "._report_shape",
    "REASONS": "._report_shape",
    "REPORT_TYPE": "._report_shape",
    "REPORT_TYPE_V1": "._report_shape",
    "report_problems": "._report_shape",
    "selection_digest": "._report_shape",
    "ROUTES": "._routes",
    "clean_query": "._routes",
    "match_route": "._routes",
    "MAX_ENVELOPE_BYTES": "._verify_handler",
    "AuditRequestBody": "._wire",
    "AuditStatus": "._wire",
    "VerifyCheck": "._wire",
    "VerifyReport": "._wire",
}


def __getattr__(name: str) -> Any:
    module = _FRONT.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from ._app import EnclaveExtension

    return [{"module": "jupyter_ext", "app": EnclaveExtension}]


__all__ = sorted(
    [
        *_FRONT,
        "BadResponse",
        "EnclaveClientError",
        "NotConfigured",
        "ServiceRefused",
        "ServiceUnavailable",
        "_jupyter_server_extension_points",
    ]
)
