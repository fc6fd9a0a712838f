"""The wire layer: every request an ``httpx`` client sends crosses one boundary.

At capture the live transport answers and the exchange is recorded through ``ctx``; at
replay the record answers and nothing is sent: a request the record does not hold ends
the branch (``divergence`` before the departure point, ``unservable`` after it), as any
call does. The openai client takes such a client as ``http_client=`` (the anthropic
client likewise); so does everything built on them::

    from openai import AsyncOpenAI
    from enclave.adapters.http import async_client, http_boundary

    MODEL = http_boundary("openai")   # declare it: AgentSpec(boundaries=(MODEL, ...))

    async def agent(ctx, inputs):
        client = AsyncOpenAI(http_client=async_client(ctx, MODEL))
        ...

A request is recorded as its *key* (``request_key``): the method, the URL (scheme, host,
port, path and query), the headers that decide the answer, and the body — JSON as a JSON value, so a
field of it is addressable by a JSON Pointer (``/body/messages/0/content``); anything
else as base64. Headers that carry credentials (``authorization``, ``x-api-key``...) are
never recorded, and headers that differ between two identical runs (retry counts,
timeouts, platform, trace context, lengths) are left out of the key, so identical runs
give identical keys. Every field is sealed (``confidential``, encrypted); the boundary's
name is the only thing in clear.

The answer is recorded whole (status, headers, body; a streamed body is read to its end
and served as one: an SSE parser re-chunks it) and served as the client would have
received it. Run the client with ``max_retries=0`` at replay if it retries on its own:
a retry's jitter is the client's, not the run's.
"""

from __future__ import annotations

import base64
import json
import platform
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
import httpx2

from ledger import StepKind

from ..capture import BoundarySpec, Context, FieldPolicy, policy, suspended
from . import _warm_ups

__all__ = [
    "CREDENTIAL_HEADERS",
    "VOLATILE_HEADERS",
    "answer_record",
    "RecordedTransport",
    "RecordedTransport2",
    "async_client",
    "client",
    "http_boundary",
    "request_key",
]

# never recorded, in any form: what authenticates the client
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"}
)
# left out of the key: they differ between identical runs and decide nothing the answer
# depends on (the openai/anthropic clients' x-stainless-* stamps, trace context, lengths)
VOLATILE_HEADERS = frozenset(
    {
        "user-agent",
        "content-length",
        "host",
        "connection",
        "accept-encoding",
        "traceparent",
        "tracestate",
        "baggage",
        "idempotency-key",
        "x-request-id",
    }
)
VOLATILE_PREFIXES = ("x-stainless-",)

_SEALED = policy("confidential")


def http_boundary(
    name: str,
    *,
    kind: StepKind = StepKind.MODEL,
    fields: FieldPolicy = _SEALED,
    body_schema: Mapping[str, Any] | None = None,
) -> BoundarySpec:
    """The boundary one HTTP client's requests cross (declare it in the ``AgentSpec``):
    a model endpoint by default. Every field is sealed with ``fields``. ``body_schema``
    is the JSON Schema of the answers' JSON bodies: the members it declares are what an
    intervention may change (``/body/json/...``)."""
    body: dict[str, Any] = {"type": ["object", "null"]}
    if body_schema is not None:
        body["properties"] = {"json": dict(body_schema)}
    return BoundarySpec(
        kind=kind,
        name=name,
        request={"method": fields, "url": fields, "headers": fields, "body": fields},
        response={"status": fields, "headers": fields, "body": fields},
        json_schema={
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "headers": {"type": "object"},
                "body": body,
            },
        },
    )


def _headers(headers: Iterable[tuple[str, str]], *, volatile: bool) -> dict[str, str]:
    kept: dict[str, str] = {}
    for raw_name, value in headers:
        name = raw_name.lower()
        if name in CREDENTIAL_HEADERS:
            continue
        if volatile and (name in VOLATILE_HEADERS or name.startswith(VOLATILE_PREFIXES)):
            continue
        kept[name] = f"{kept[name]}, {value}" if name in kept else value
    return dict(sorted(kept.items()))


def _body(content: bytes, content_type: str) -> Any:
    """JSON as its value (stable under key order and spacing); other bytes as base64."""
    if not content:
        return None
    if "json" in content_type:
        try:
            return {"json": json.loads(content)}
        except ValueError:
            pass
    if content_type.startswith("text/"):
        try:
            return {"text": content.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"base64": base64.b64encode(content).decode("ascii")}


def _content(body: Any) -> bytes:
    if body is None:
        return b""
    if "json" in body:
        return json.dumps(body["json"], ensure_ascii=False).encode("utf-8")
    if "text" in body:
        return str(body["text"]).encode("utf-8")
    return base64.b64decode(body["base64"], validate=True)


def request_key(request: Any) -> dict[str, Any]:
    """What a request is matched and recorded by: no credentials, nothing volatile."""
    url = request.url
    return {
        "method": request.method,
        # host and port (a scheme's default port is left out, as the client may): two
        # servers on one host are two endpoints
        "url": f"{url.scheme}://{url.netloc.decode('ascii')}{url.raw_path.decode('ascii')}",
        "headers": _headers(request.headers.multi_items(), volatile=True),
        "body": _body(request.content, request.headers.get("content-type", "")),
    }


def answer_record(response: Any, content: bytes) -> dict[str, Any]:
    """What an answer is recorded and served as: status, kept headers, decoded body."""
    headers = _headers(response.headers.multi_items(), volatile=False)
    # served decoded and whole: the length and encoding of the served bytes are new
    for name in ("content-encoding", "content-length", "transfer-encoding"):
        headers.pop(name, None)
    return {
        "status": response.status_code,
        "headers": headers,
        "body": _body(content, response.headers.get("content-type", "")),
    }


class RecordedTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Sends each request through ``ctx`` across ``spec``: ``live`` (the network by
    default) answers at capture; the record answers at replay and ``live`` is never used
    (nor, when it is the default, ever made). For ``httpx`` clients;
    ``RecordedTransport2`` is the same for ``httpx2`` clients."""

    _http: Any = httpx  # the library whose requests and responses it handles

    def __init__(
        self,
        ctx: Context,
        spec: BoundarySpec,
        *,
        live: Any = None,
        alive: Any = None,
    ) -> None:
        self._ctx = ctx
        self._spec = spec
        self._live = live
        self._alive = alive

    def handle_request(self, request: Any) -> Any:
        def send(_key: Mapping[str, Any]) -> dict[str, Any]:
            if self._live is None:
                self._live = self._http.HTTPTransport(limits=self._single_use())
            response = self._live.handle_request(request)
            try:
                return answer_record(response, response.read())
            finally:
                response.close()

        request.read()
        answer = self._ctx.call(self._spec, request_key(request), live=send)
        return self._response(answer, request)

    async def handle_async_request(self, request: Any) -> Any:
        async def send(_key: Mapping[str, Any]) -> dict[str, Any]:
            if self._alive is None:
                self._alive = self._http.AsyncHTTPTransport(limits=self._single_use())
            response = await self._alive.handle_async_request(request)
            try:
                return answer_record(response, await response.aread())
            finally:
                await response.aclose()

        await request.aread()
        answer = await self._ctx.acall(self._spec, request_key(request), live=send)
        return self._response(answer, request)

    def _single_use(self) -> Any:
        """No idle connection kept: a run's client is never closed by the agent, and a
        connection kept alive past the run would outlive its event loop."""
        return self._http.Limits(max_keepalive_connections=0)

    def _response(self, answer: Mapping[str, Any], request: Any) -> Any:
        return self._http.Response(
            status_code=int(answer["status"]),
            headers=dict(answer["headers"]),
            content=_content(answer["body"]),
            request=request,
        )

    def close(self) -> None:
        if self._live is not None:
            self._live.close()

    async def aclose(self) -> None:
        if self._alive is not None:
            await self._alive.aclose()


class RecordedTransport2(RecordedTransport, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """``RecordedTransport`` for ``httpx2`` clients (the openai and anthropic clients'
    own library, and the frameworks that build clients on it)."""

    _http = httpx2


def _probe_platform() -> None:
    """The openai and anthropic clients stamp the host's platform on every request
    (``platform.platform()``, ``/etc/os-release``), which the ``platform`` module probes
    once per process and caches. Probed inside a run, those reads would be ambient inputs
    of whichever run came first and of no run after it. Probe first, unobserved: the
    stamps are volatile headers, in no request key. (A replay worker's template probes
    before any run, ``enclave.sandbox.inside._worker``.)"""
    with suspended():
        platform.platform()
        platform.uname().processor  # noqa: B018 - a cached property: computed here, once
        try:
            platform.freedesktop_os_release()
        except OSError:
            pass  # nothing to cache, and nothing a run could read either


def _transport(library: str) -> type[RecordedTransport]:
    if library == "httpx":
        return RecordedTransport
    if library == "httpx2":
        return RecordedTransport2
    raise ValueError("the client library is httpx or httpx2")


def client(ctx: Context, spec: BoundarySpec, *, library: str = "httpx", **options: Any) -> Any:
    """A ``Client`` of ``library`` (``httpx`` or ``httpx2``) whose every request crosses
    ``spec`` through ``ctx``; ``transport=`` is the live one (the network by default)."""
    transport = _transport(library)
    live = options.pop("transport", None)
    return transport._http.Client(transport=transport(ctx, spec, live=live), **options)


def async_client(
    ctx: Context, spec: BoundarySpec, *, library: str = "httpx", **options: Any
) -> Any:
    """An ``AsyncClient`` of ``library`` (``httpx`` or ``httpx2``) whose every request
    crosses ``spec`` through ``ctx``; ``transport=`` is the live one."""
    transport = _transport(library)
    live = options.pop("transport", None)
    return transport._http.AsyncClient(transport=transport(ctx, spec, alive=live), **options)


_probe_platform()  # at import: before any run of the process


def _warm_template() -> None:
    """In a replay worker's template, once (``_warm_ups``): a round of the openai client,
    when the template imported it."""
    if "openai" in sys.modules:
        _warm_ups.openai_client()
