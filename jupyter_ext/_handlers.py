"""REST handlers under ``/enclave/api/``: the known service routes, forwarded.

HTTP errors are produced here and only here, from the forwarder's ``(status, body)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from ._client import read_token
from ._errors import NotConfigured
from ._forward import error_body, forward
from ._routes import match_route

if TYPE_CHECKING:
    from ._app import EnclaveExtension

__all__ = ["AUTH_RESOURCE", "URL_PATTERN", "EnclaveAPIHandler", "EnclaveHandler"]

AUTH_RESOURCE = "enclave"
URL_PATTERN = r"/enclave/api/(.*)"


class EnclaveHandler(ExtensionHandlerMixin, APIHandler):
    """The extension's handlers: its auth resource, its app, JSON replies never cached."""

    auth_resource = AUTH_RESOURCE

    @property
    def app(self) -> EnclaveExtension:
        return self.extensionapp  # type: ignore[return-value]

    def _reply(self, status: int, body: bytes) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(body)


class EnclaveAPIHandler(EnclaveHandler):
    """Forwards ``GET``/``POST /enclave/api/<route>`` to ``<service>/api/v1/<route>``."""

    async def _forward(self, method: str, path: str) -> None:
        route = match_route(method, path)
        if route is None:
            self._reply(404, error_body("not_found", "not a known enclave route"))
            return
        try:
            token = read_token(token_env=self.app.token_env, token_file=self.app.token_file or None)
        except NotConfigured as exc:
            self._reply(503, error_body(NotConfigured.code, str(exc)))
            return
        query = {k: self.get_query_argument(k) for k in self.request.query_arguments}
        status, body = await forward(
            service_url=self.app.service_url,
            token=token,
            route=route,
            path=path,
            query=query,
            body=self.request.body if route.has_body else None,
            timeout=self.app.timeout,
        )
        if status >= 500:
            self.log.warning("enclave service: %s %s -> %s", method, route.name, status)
        self._reply(status, body)

    @web.authenticated
    @authorized
    async def get(self, path: str) -> None:
        await self._forward("GET", path)

    @web.authenticated
    @authorized
    async def post(self, path: str) -> None:
        await self._forward("POST", path)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # one-line JSON for every error raised by the server itself, never a traceback
        reason = self._reason if status_code < 500 else "internal error"
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(f"http_{status_code}", reason))
