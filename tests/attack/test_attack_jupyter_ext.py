"""Hostile input to the Jupyter side: request bodies posted to the server extension,
answers of a hostile enclave service, and certificate files an analyst opens.

Properties: every refusal is a one-line JSON 4xx without a traceback or an echo of what
was posted; the handlers sit behind Jupyter's authentication, XSRF and authorization;
a service answer outside the contract becomes a client error, never an exception of
another kind; every HTML the kernel side produces keeps service and certificate strings
inert; no canary reaches a response, a log record or widget HTML it should not.
"""

from __future__ import annotations

import base64
import json
import logging
import shlex
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.canary import INCIDENT_CANARIES, find_canaries

pytest_plugins = ["pytest_jupyter.jupyter_server"]

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CANARY = "CANARY-attack-jext-7c3a91"
PAYLOAD_CANARY = INCIDENT_CANARIES[0]
CANARIES = [CANARY, PAYLOAD_CANARY]
TOKEN_ENV = "ATTACK_JEXT_ANALYST_TOKEN"
XSS = f'"><img src=x onerror=alert(1)><script>alert("{CANARY}")</script><a href="javascript:x">'
DEEP = 5_000  # far beyond the JSON decoder's recursion limit, far below any size limit


# -- a hostile enclave service --------------------------------------------------------


class HostileService:
    """An HTTP server where the enclave service would be: answers are set per path, and
    every request that reaches it is recorded."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, str, bytes]] = {}
        self.seen: list[tuple[str, str, bytes]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                service.seen.append((self.command, self.path, body))
                path = self.path.split("?", 1)[0]
                status, ctype, content = service.answers.get(
                    path, (404, "application/json", b'{"error": {"code": "not_found"}}')
                )
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def json(self, path: str, data: Any, status: int = 200) -> None:
        self.answers["/api/v1/" + path] = (status, "application/json", json.dumps(data).encode())

    def raw(self, path: str, body: bytes, status: int = 200, ctype: str = "text/html") -> None:
        self.answers["/api/v1/" + path] = (status, ctype, body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def hostile() -> Iterator[HostileService]:
    service = HostileService()
    yield service
    service.close()


@pytest.fixture
def jp_server_config(hostile: HostileService) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "EnclaveExtension": {
            "service_url": hostile.url,
            "token_env": TOKEN_ENV,
            "issuer_key": str(GOLDEN / "certificate_v2.pub.pem"),
        },
    }


@pytest.fixture(autouse=True)
def _analyst_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "analyst-token-for-the-hostile-service")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.lines.append(text)


@pytest.fixture
def server_log(jp_serverapp: Any) -> Iterator[_Records]:
    records = _Records()
    loggers = {logging.getLogger(), jp_serverapp.log, logging.getLogger("tornado")}
    levels = {lg: lg.level for lg in loggers}
    for lg in loggers:
        lg.addHandler(records)
        lg.setLevel(logging.DEBUG)
    yield records
    for lg in loggers:
        lg.removeHandler(records)
        lg.setLevel(levels[lg])


def _golden_text() -> str:
    return (GOLDEN / "certificate_v2.dsse.json").read_text()


async def _refused(jp_fetch: Any, *parts: str, **kw: Any) -> tuple[int, dict[str, Any]]:
    """The 4xx refusal of one request: one line of JSON, no traceback, no canary."""
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch(*parts, **kw)
    raw = refused.value.response.body
    assert b"Traceback" not in raw and b"\n" not in raw.strip(), raw[:300]
    assert find_canaries(raw, CANARIES) == [], raw[:300]
    body = json.loads(raw)
    assert 400 <= refused.value.code < 500, (refused.value.code, body)
    return refused.value.code, body


# -- POST /enclave/verify: authentication, XSRF, origin, authorization ----------------


@pytest.mark.parametrize("authorization", ["", "token not-the-server-token", "Bearer x"])
async def test_verify_needs_jupyters_authentication(
    jp_fetch: Any, server_log: _Records, authorization: str
) -> None:
    body = json.dumps({"payload": CANARY, "note": PAYLOAD_CANARY}).encode()
    status, _ = await _refused(
        jp_fetch,
        "enclave",
        "verify",
        method="POST",
        body=body,
        headers={"Authorization": authorization},
    )
    assert status == 403
    assert find_canaries("\n".join(server_log.lines).encode(), CANARIES) == []


def _cookies(response: Any) -> str:
    pairs = [c.split(";", 1)[0] for c in response.headers.get_list("Set-Cookie")]
    return "; ".join(p for p in pairs if not p.startswith("_xsrf="))


async def test_cookie_session_post_without_xsrf_is_refused(jp_fetch: Any) -> None:
    """A browser session (cookie) posting from elsewhere carries no XSRF token."""
    login = await jp_fetch("api", "status")
    session = _cookies(login)
    assert session, "the token request set no login cookie"
    status, _ = await _refused(
        jp_fetch,
        "enclave",
        "verify",
        method="POST",
        body=_golden_text(),
        headers={"Authorization": "", "Cookie": session, "Content-Type": "text/plain"},
    )
    assert status == 403
    # the same session with a matching XSRF token is served, so the refusal is the XSRF's
    accepted = await jp_fetch(
        "enclave",
        "verify",
        method="POST",
        body=_golden_text(),
        headers={
            "Authorization": "",
            "Cookie": f"{session}; _xsrf=deadbeef",
            "X-XSRFToken": "deadbeef",
        },
    )
    assert json.loads(accepted.body)["ok"] is True


async def test_cross_origin_session_requests_are_refused(
    jp_fetch: Any, hostile: HostileService
) -> None:
    """A page elsewhere riding the analyst's session: refused even with an XSRF pair."""
    hostile.json("whoami", {"name": "alice", "tenant": "acme", "roles": []})
    session = _cookies(await jp_fetch("api", "status"))
    headers = {
        "Authorization": "",
        "Cookie": f"{session}; _xsrf=deadbeef",
        "X-XSRFToken": "deadbeef",
        "Origin": "http://evil.example",
    }
    await _refused(
        jp_fetch, "enclave", "verify", method="POST", body=_golden_text(), headers=headers
    )
    await _refused(jp_fetch, "enclave", "api", "whoami", headers=headers)
    await _refused(jp_fetch, "enclave", "api", "audits", method="POST", body="{}", headers=headers)
    assert hostile.seen == []


async def test_handlers_ask_jupyters_authorizer(
    jp_fetch: Any, jp_serverapp: Any, hostile: HostileService, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, str]] = []

    def deny_enclave(handler: Any, user: Any, action: str, resource: str) -> bool:
        asked.append((action, resource))
        return resource != "enclave"

    authorizer = jp_serverapp.web_app.settings["authorizer"]
    monkeypatch.setattr(authorizer, "is_authorized", deny_enclave)
    hostile.json("whoami", {"name": "alice", "tenant": "acme", "roles": []})
    status, _ = await _refused(jp_fetch, "enclave", "verify", method="POST", body=_golden_text())
    assert status == 403
    status, _ = await _refused(jp_fetch, "enclave", "api", "whoami")
    assert status == 403
    assert ("write", "enclave") in asked and ("read", "enclave") in asked
    assert hostile.seen == []


async def test_verify_refuses_other_methods_as_json(jp_fetch: Any) -> None:
    status, body = await _refused(jp_fetch, "enclave", "verify")
    assert status == 405 and body["error"]["code"] == "http_405"


# -- POST /enclave/verify: hostile bodies ---------------------------------------------


def _hostile_bodies() -> dict[str, tuple[bytes, dict[str, str]]]:
    golden = json.loads(_golden_text())
    deep_keyid = dict(golden)
    deep_keyid["signatures"] = [
        {"sig": golden["signatures"][0]["sig"], "keyid": "x"},
    ]
    deep_keyid_text = json.dumps(deep_keyid).replace(
        '"keyid": "x"', '"keyid": ' + "[" * DEEP + json.dumps(CANARY) + "]" * DEEP
    )
    json_ct = {"Content-Type": "application/json"}
    return {
        "deep array": (("[" * DEEP + json.dumps(CANARY) + "]" * DEEP).encode(), json_ct),
        "deep object": (('{"a":' * DEEP + json.dumps(CANARY) + "}" * DEEP).encode(), json_ct),
        "deep keyid in a real envelope": (deep_keyid_text.encode(), json_ct),
        "not JSON": (f"<html>{CANARY} {PAYLOAD_CANARY}".encode(), json_ct),
        "invalid UTF-8": (b'{"payload": "\xff\xfe' + CANARY.encode() + b'"}', json_ct),
        "UTF-16 JSON": (json.dumps({"payload": CANARY}).encode("utf-16"), json_ct),
        "huge integer": (b'{"payload": ' + b"9" * 50_000 + b"}", json_ct),
        "form-encoded": (
            f"payload={CANARY}&payloadType={PAYLOAD_CANARY}".encode(),
            {"Content-Type": "application/x-www-form-urlencoded"},
        ),
        "multipart": (
            (
                '--b\r\nContent-Disposition: form-data; name="payload"\r\n\r\n'
                f"{CANARY}\r\n--b--\r\n"
            ).encode(),
            {"Content-Type": "multipart/form-data; boundary=b"},
        ),
        "text/plain": (
            json.dumps({"payload": PAYLOAD_CANARY}).encode(),
            {"Content-Type": "text/plain"},
        ),
        "JSON string": (json.dumps(CANARY).encode(), json_ct),
        "empty": (b" ", json_ct),
    }


@pytest.mark.parametrize("name", list(_hostile_bodies()))
async def test_hostile_verify_body_is_answered_without_a_server_error(
    jp_fetch: Any, server_log: _Records, hostile: HostileService, name: str
) -> None:
    from tornado.httpclient import HTTPClientError

    body, headers = _hostile_bodies()[name]
    try:
        response = await jp_fetch("enclave", "verify", method="POST", body=body, headers=headers)
    except HTTPClientError as refused:
        raw = refused.response.body
        assert refused.code < 500, (refused.code, raw[:200])
        assert b"Traceback" not in raw and b"\n" not in raw.strip()
        assert find_canaries(raw, CANARIES) == []
        json.loads(raw)
    else:
        report = json.loads(response.body)
        assert report["ok"] is False
        assert next(c["name"] for c in report["checks"] if not c["ok"]) == "envelope"
        assert find_canaries(response.body, CANARIES) == []
    assert find_canaries("\n".join(server_log.lines).encode(), CANARIES) == []
    assert hostile.seen == []


async def test_an_envelope_just_under_the_limit_is_verified_not_refused(jp_fetch: Any) -> None:
    from jupyter_ext import MAX_ENVELOPE_BYTES

    filler = json.dumps({"payload": "A", "payloadType": "x", "signatures": []})
    body = filler.encode() + b" " * (MAX_ENVELOPE_BYTES - len(filler))
    assert len(body) == MAX_ENVELOPE_BYTES
    report = json.loads((await jp_fetch("enclave", "verify", method="POST", body=body)).body)
    assert report["ok"] is False
    status, error = await _refused(jp_fetch, "enclave", "verify", method="POST", body=body + b" ")
    assert status == 413 and error["error"]["code"] == "too_large"


# -- /enclave/api/...: hostile requests and a hostile service -------------------------


async def test_deeply_nested_audit_request_is_a_400_and_not_forwarded(
    jp_fetch: Any, hostile: HostileService
) -> None:
    body = '{"purpose": ' + "[" * DEEP + json.dumps(CANARY) + "]" * DEEP + "}"
    assert len(body) < 64 * 1024
    status, error = await _refused(jp_fetch, "enclave", "api", "audits", method="POST", body=body)
    assert status == 400 and error["error"]["code"] == "bad_request"
    assert hostile.seen == []


@pytest.mark.parametrize(
    "body",
    [
        f"<script>{CANARY}</script>".encode(),
        json.dumps([CANARY]).encode(),
        b"\xff" + CANARY.encode(),
        b'{"purpose": "' + CANARY.encode() * 3_000 + b'"}',
    ],
    ids=["html", "array", "bad utf-8", "over 64 KiB"],
)
async def test_bad_audit_requests_are_refused_before_the_service(
    jp_fetch: Any, hostile: HostileService, body: bytes
) -> None:
    status, error = await _refused(jp_fetch, "enclave", "api", "audits", method="POST", body=body)
    assert status in (400, 413) and error["error"]["code"] == "bad_request"
    assert hostile.seen == []


@pytest.mark.parametrize(
    "path",
    ["whoami%0A", "specimens/sp-1%0A", "certificates/au-1%0A/summary", "specimens/sp-1%00"],
)
async def test_a_route_with_a_control_character_is_not_a_known_route(
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    hostile: HostileService,
    path: str,
) -> None:
    from tornado.httpclient import HTTPClientError

    hostile.json("whoami", {"name": "alice", "tenant": "acme", "roles": []})
    hostile.json("specimens/sp-1", {"specimen_id": "sp-1"})
    # sent as written: jp_fetch would quote the percent sign
    with pytest.raises(HTTPClientError) as refused:
        await http_server_client.fetch(
            f"{jp_base_url}enclave/api/{path}", headers=jp_auth_header, request_timeout=20
        )
    raw = refused.value.response.body
    assert b"Traceback" not in raw and b"\n" not in raw.strip()
    assert refused.value.code == 404, (refused.value.code, raw)
    assert json.loads(raw)["error"]["code"] == "not_found"
    assert hostile.seen == []


async def test_a_deeply_nested_service_answer_is_a_502(
    jp_fetch: Any, hostile: HostileService, server_log: _Records
) -> None:
    hostile.raw(
        "whoami",
        ("[" * DEEP + json.dumps(CANARY) + "]" * DEEP).encode(),
        ctype="application/json",
    )
    status, error = await _refused_any(jp_fetch, "enclave", "api", "whoami")
    assert status == 502 and error["error"]["code"] == "bad_response"
    assert find_canaries("\n".join(server_log.lines).encode(), CANARIES) == []


async def _refused_any(jp_fetch: Any, *parts: str, **kw: Any) -> tuple[int, dict[str, Any]]:
    """Any refusal (4xx or 5xx): one line of JSON, no traceback, no canary."""
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch(*parts, **kw)
    raw = refused.value.response.body
    assert b"Traceback" not in raw and b"\n" not in raw.strip(), raw[:300]
    assert find_canaries(raw, CANARIES) == [], raw[:300]
    return refused.value.code, json.loads(raw)


@pytest.mark.parametrize(
    ("status", "ctype", "body", "expected"),
    [
        (200, "text/html", f"<script>{CANARY}</script>".encode(), (502, "bad_response")),
        (403, "text/html", f"<h1>{CANARY}</h1>".encode(), (403, "http_403")),
        (
            500,
            "application/json",
            json.dumps(
                {"error": {"code": "boom", "message": f"{CANARY} {PAYLOAD_CANARY}"}}
            ).encode(),
            (502, "service_error"),
        ),
        (503, "text/plain", f"Traceback ... {PAYLOAD_CANARY}".encode(), (502, "service_error")),
    ],
    ids=["200 html", "403 html", "500 json", "503 traceback"],
)
async def test_a_hostile_service_answer_is_not_echoed(
    jp_fetch: Any,
    hostile: HostileService,
    server_log: _Records,
    status: int,
    ctype: str,
    body: bytes,
    expected: tuple[int, str],
) -> None:
    hostile.raw("whoami", body, status=status, ctype=ctype)
    got, error = await _refused_any(jp_fetch, "enclave", "api", "whoami")
    assert (got, error["error"]["code"]) == expected
    assert find_canaries("\n".join(server_log.lines).encode(), CANARIES) == []


# -- the kernel side: client, panel and magics against a hostile service -------------


def _client(hostile: HostileService) -> Any:
    from jupyter_ext import EnclaveClient

    return EnclaveClient(base_url=hostile.url, token="analyst", timeout=5.0)


@pytest.mark.parametrize(
    "answer",
    [
        ("[" * DEEP + "1" + "]" * DEEP).encode(),
        b'["not", "an", "object"]',
        b'"a string"',
        b"42",
    ],
    ids=["deeply nested", "array", "string", "number"],
)
def test_an_answer_outside_the_contract_is_a_client_error(
    hostile: HostileService, answer: bytes
) -> None:
    from jupyter_ext import EnclaveClientError

    hostile.raw("whoami", answer, ctype="application/json")
    hostile.raw("specimens", answer, ctype="application/json")
    hostile.raw("certificates/au-1/summary", answer, ctype="application/json")
    with _client(hostile) as client:
        for read in (client.whoami, client.specimens, lambda: client.certificate_summary("au-1")):
            with pytest.raises(EnclaveClientError):
                read()


def test_a_deeply_nested_refusal_is_a_client_error(hostile: HostileService) -> None:
    from jupyter_ext import EnclaveClientError

    hostile.raw(
        "whoami", ("[" * DEEP + "1" + "]" * DEEP).encode(), status=403, ctype="application/json"
    )
    with _client(hostile) as client, pytest.raises(EnclaveClientError):
        client.whoami()


_ALLOWED_TAGS = {
    "div", "b", "i", "code", "span", "table", "thead", "tbody", "tr", "th", "td", "h2",
    "h3", "h4", "p", "ol", "ul", "li", "progress", "svg", "rect", "line", "text", "title",
    "style", "pre",
}  # fmt: skip


class _Inert(HTMLParser):
    """Tags and attributes of an HTML fragment, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.bad: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if name.startswith("on") or name in {"href", "src", "xlink:href", "action"}:
                self.bad.append(f"<{tag} {name}>")
            if value and value.strip().lower().startswith("javascript:"):
                self.bad.append(f"<{tag} {name}={value}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _assert_inert(html: str, where: str) -> str:
    parser = _Inert()
    parser.feed(html)
    parser.close()
    assert parser.tags <= _ALLOWED_TAGS, (where, parser.tags - _ALLOWED_TAGS, html[:400])
    assert parser.bad == [], (where, parser.bad)
    return "".join(parser.text)


def _html_values(widget: Any) -> Iterator[tuple[str, str]]:
    import ipywidgets as w

    if isinstance(widget, w.HTML):
        yield " ".join(sorted(widget._dom_classes)) or "html", widget.value
    for child in getattr(widget, "children", ()):
        yield from _html_values(child)


def _summary() -> dict[str, Any]:
    return {
        "classification": XSS,
        "auditability": {"class": XSS, "reason": XSS},
        "request": {
            "specimen": XSS,
            "call": XSS,
            "strategy": XSS,
            "purpose": XSS,
            "samples": XSS,
            "seed": XSS,
        },
        "baseline": {
            "reproduced": True,
            "layers": {XSS: {"ok": True, "changed_fields": [XSS], "similarity": XSS}},
        },
        "effect": {
            "mean_delta": 0.1,
            "delta_interval": [0.0, 0.2],
            "histogram": {"edges": [0.0, 0.1, 0.2], "counts": [1, 2]},
            "confidence": 0.95,
        },
        "placebo": {"passed": True, "flips": XSS, "max_abs_delta": XSS},
        "disclosure": {"bits": 3.0, "resolution": XSS, "terms": [{"field": XSS, "bits": 1.0}]},
        "lineage": [{"kind": XSS, XSS: XSS}],
        "not_established": [XSS],
        "issued_at": XSS,
        "issuer": XSS,
    }


def _serve_hostile_metadata(hostile: HostileService) -> None:
    hostile.json("whoami", {"name": XSS, "tenant": XSS, "roles": [XSS]})
    columns = ["tenant_id", "agent_name", "agent_version", "highest_classification", "step_count"]
    item = {"specimen_id": "sp-1", **{c: XSS for c in columns}, "sealed_at": XSS}
    hostile.json("specimens", {"items": [item], "total": 1, "next": None})
    hostile.json(
        "specimens/sp-1",
        {
            "calls": [{"call_id": "c1", "kind": XSS, "name": XSS, "alias": XSS}],
            "cuts": [{"name": XSS, "call_id": XSS}],
        },
    )
    hostile.json("policies", {"items": [{"id": XSS, "version": XSS, "strategy": XSS}]})
    audit = {
        "audit_id": "au-1",
        "status": "COMPLETED",
        "classification": XSS,
        "auditability": XSS,
        "failure_code": XSS,
        "has_certificate": True,
        "specimen_id": XSS,
        "created_at": XSS,
    }
    hostile.json("audits", {"items": [audit]})
    hostile.json("audits/au-1", audit)
    hostile.json("certificates/au-1/summary", _summary())
    hostile.json(
        "certificates/au-1/verify",
        {"ok": False, "checks": [{"step": 1, "name": XSS, "ok": False, "detail": XSS}]},
    )
    hostile.json("certificates/au-1", {"error": {"code": XSS, "message": XSS}}, status=403)


def test_panel_keeps_every_service_string_inert(hostile: HostileService, tmp_path: Path) -> None:
    from jupyter_ext import AuditRequestBody, EnclavePanel

    _serve_hostile_metadata(hostile)
    with _client(hostile) as client:
        panel = EnclavePanel(client, poll_interval=60.0, export_dir=str(tmp_path / "out"))
        try:
            panel.form.specimen.value = "sp-1"
            panel.show_certificate("au-1")
            panel.verify_current()
            panel.export_current()
            hostile.json("audits", {"error": {"code": XSS, "message": XSS}}, status=403)
            panel.load_audits()
            hostile.json(
                "audits",
                {"audit_id": "au-2", "status": "CANCELLED", "failure_code": XSS},
                status=200,
            )
            panel._request(AuditRequestBody(specimen_id="sp-1", purpose="p", revision="m=r"))
            texts = [_assert_inert(html, where) for where, html in _html_values(panel)]
        finally:
            panel.close()
    shown = "".join(texts)
    # the hostile strings were shown, as text
    assert shown.count(CANARY) >= 10, shown[:500]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_magics_keep_every_service_string_inert(hostile: HostileService) -> None:
    from jupyter_ext import EnclaveMagics

    _serve_hostile_metadata(hostile)
    with _client(hostile) as client:
        magics = EnclaveMagics(shell=None)
        magics._client = client
        shown = []
        for line in ("whoami", "specimens", "status au-1", "certificate au-1"):
            rendered = magics.enclave(line)
            shown.append(_assert_inert(rendered.html, line))
        hostile.json("whoami", {"error": {"code": XSS, "message": XSS}}, status=403)
        shown.append(_assert_inert(magics.enclave("whoami").html, "refused whoami"))
    assert all(CANARY in text for text in shown), shown


def test_a_hostile_specimen_id_from_the_service_does_not_break_the_panel(
    hostile: HostileService,
) -> None:
    """The service lists an id the client would refuse to ask about: picking it shows
    an error in the panel, it does not raise out of the widget callback."""
    from jupyter_ext import EnclavePanel

    _serve_hostile_metadata(hostile)
    bad = "../../" + CANARY
    columns = {"tenant_id": "t", "agent_name": "a", "agent_version": "1", "step_count": 1}
    hostile.json("specimens", {"items": [{"specimen_id": bad, **columns}], "total": 1})
    with _client(hostile) as client:
        panel = EnclavePanel(client, poll_interval=60.0)
        try:
            panel.form.specimen.value = bad
            assert panel.error.value != ""
            _assert_inert(panel.error.value, "error")
        finally:
            panel.close()
    assert all(".." not in path for _, path, _ in hostile.seen)


# -- certificate files an analyst opens -----------------------------------------------


def test_a_hostile_certificate_file_name_and_content_stay_inert(tmp_path: Path) -> None:
    from jupyter_ext import EnclaveMagics

    golden = json.loads(_golden_text())
    golden["signatures"][0]["keyid"] = XSS
    golden["payloadType"] = XSS
    path = tmp_path / f"{XSS.replace('/', '')}.dsse.json"
    path.write_text(json.dumps(golden))
    key = GOLDEN / "certificate_v2.pub.pem"
    rendered = EnclaveMagics(shell=None).enclave(
        f"verify {shlex.quote(str(path))} --key {shlex.quote(str(key))} --offline"
    )
    text = _assert_inert(rendered.html, "verify")
    assert 'data-ok="false"' in rendered.html
    assert "VERIFICATION FAILED" in text


@pytest.mark.parametrize("shape", ["array", "object"])
def test_a_deeply_nested_certificate_file_fails_its_envelope_check(
    tmp_path: Path, shape: str
) -> None:
    from jupyter_ext import EnclaveMagics

    path = tmp_path / "deep.dsse.json"
    opener, closer = ("[", "]") if shape == "array" else ('{"a":', "}")
    path.write_text(opener * DEEP + json.dumps(PAYLOAD_CANARY) + closer * DEEP)
    key = GOLDEN / "certificate_v2.pub.pem"
    rendered = EnclaveMagics(shell=None).enclave(
        f"verify {shlex.quote(str(path))} --key {shlex.quote(str(key))} --offline"
    )
    assert 'data-ok="false"' in rendered.html
    assert 'data-name="envelope" data-ok="false"' in rendered.html
    assert find_canaries(rendered.html.encode(), CANARIES) == []


def test_a_payload_canary_in_an_unsigned_envelope_field_is_never_reported(
    tmp_path: Path,
) -> None:
    """A copy whose unsigned parts carry a payload's words: the report names the failing
    check in fixed words and holds none of them."""
    from jupyter_ext import verify_file

    golden = json.loads(_golden_text())
    cases = {
        "keyid": lambda e: e["signatures"][0].__setitem__("keyid", PAYLOAD_CANARY),
        "extra signature": lambda e: e["signatures"].append(
            {"sig": base64.b64encode(PAYLOAD_CANARY.encode()).decode(), "keyid": CANARY}
        ),
        "payload": lambda e: e.__setitem__(
            "payload", base64.b64encode(PAYLOAD_CANARY.encode() * 4).decode()
        ),
    }
    for name, tamper in cases.items():
        envelope = json.loads(json.dumps(golden))
        tamper(envelope)
        path = tmp_path / f"{name.replace(' ', '-')}.dsse.json"
        path.write_text(json.dumps(envelope))
        report = verify_file(str(path), str(GOLDEN / "certificate_v2.pub.pem"))
        out = json.dumps(report.to_dict()).encode()
        assert find_canaries(out, CANARIES) == [], (name, out)
