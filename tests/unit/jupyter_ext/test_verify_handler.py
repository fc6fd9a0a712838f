"""``POST /enclave/verify``: the server extension runs the offline verifier on the posted
envelope with the key configured on the Jupyter server — never one from the request or
the certificate — forwards nothing to the enclave service and echoes nothing posted."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import finding
from tests.support.canary import find_canaries

pytest_plugins = ["pytest_jupyter.jupyter_server"]

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
CANARY = "CANARY-verify-handler-5d1e"


class _Listener:
    """A socket where the enclave service would be: counts every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _run(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def service() -> Iterator[_Listener]:
    listener = _Listener()
    yield listener
    listener.close()


@pytest.fixture
def jp_server_config(service: _Listener) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "EnclaveExtension": {
            "service_url": service.url,
            "issuer_key": str(GOLDEN / "certificate_v2.pub.pem"),
        },
    }


def _golden(version: str = "v2") -> dict[str, Any]:
    return json.loads((GOLDEN / f"certificate_{version}.dsse.json").read_text())


async def _verify(jp_fetch: Any, body: bytes) -> dict[str, Any]:
    response = await jp_fetch("enclave", "verify", method="POST", body=body)
    assert response.code == 200
    assert response.headers["Cache-Control"] == "no-store"
    return json.loads(response.body)


def _names(report: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(c["name"], c["ok"]) for c in report["checks"]]


async def test_golden_certificates_pass_every_check(jp_fetch: Any, service: _Listener) -> None:
    report = await _verify(jp_fetch, json.dumps(_golden("v2")).encode())
    assert report["ok"] is True
    assert _names(report) == [
        ("envelope", True),
        ("signature", True),
        ("statement", True),
        ("predicate", True),
    ]
    assert report["checks"][3]["detail"] == "matches the certificate v2 schema and rules"
    # the server's own finding, re-derived from the figures it verified
    statement = json.loads(base64.b64decode(_golden("v2")["payload"]))
    assert report["finding"] == finding(statement["predicate"], statement["predicateType"])
    # the v1 golden is signed by the same issuer key
    v1 = await _verify(jp_fetch, json.dumps(_golden("v1")).encode())
    assert v1["ok"] is True and v1["finding"].startswith("This v1 certificate classifies ")
    assert service.accepted == 0


@pytest.mark.parametrize(
    ("tamper", "fails"),
    [
        ("payload byte flipped", "signature"),
        ("statement altered", "signature"),
        ("signature swapped", "signature"),
        ("payloadType changed", "envelope"),
        ("key smuggled in the envelope", "envelope"),
        ("not JSON", "envelope"),
    ],
)
async def test_tampered_copy_fails_at_its_check_without_echo(
    jp_fetch: Any, service: _Listener, tamper: str, fails: str
) -> None:
    envelope = _golden("v2")
    if tamper == "payload byte flipped":
        payload = bytearray(base64.b64decode(envelope["payload"]))
        payload[200] ^= 0x01
        envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    elif tamper == "statement altered":
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"]["purpose_note"] = CANARY
        envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    elif tamper == "signature swapped":
        envelope["signatures"] = _golden("v1")["signatures"]
        envelope["signatures"][0]["keyid"] = CANARY
    elif tamper == "payloadType changed":
        envelope["payloadType"] = f"application/{CANARY}"
    elif tamper == "key smuggled in the envelope":
        envelope["publicKey"] = CANARY
    body = b'{"payload": "' + CANARY.encode() if tamper == "not JSON" else json.dumps(envelope)
    report = await _verify(jp_fetch, body if isinstance(body, bytes) else body.encode())
    assert report["ok"] is False and report["finding"] is None
    assert next(c["name"] for c in report["checks"] if not c["ok"]) == fails
    assert find_canaries(json.dumps(report).encode(), [CANARY]) == []
    assert service.accepted == 0


async def test_wrong_trusted_key_fails_the_signature(
    jp_fetch: Any, jp_serverapp: Any, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    other = tmp_path / "other.pub.pem"
    other.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    for ext in jp_serverapp.extension_manager.extensions["jupyter_ext"].extension_points.values():
        ext.app.issuer_key = str(other)
    report = await _verify(jp_fetch, json.dumps(_golden("v2")).encode())
    assert report["ok"] is False
    assert next(c["name"] for c in report["checks"] if not c["ok"]) == "signature"


async def _error(jp_fetch: Any, body: bytes, **kw: Any) -> tuple[int, dict[str, Any]]:
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("enclave", "verify", method="POST", body=body, **kw)
    raw = refused.value.response.body
    assert b"Traceback" not in raw and b"\n" not in raw.strip()
    assert CANARY.encode() not in raw
    return refused.value.code, json.loads(raw)


async def test_without_a_configured_key_the_server_refuses(
    jp_fetch: Any, jp_serverapp: Any
) -> None:
    for ext in jp_serverapp.extension_manager.extensions["jupyter_ext"].extension_points.values():
        ext.app.issuer_key = ""
    status, body = await _error(jp_fetch, json.dumps(_golden("v2")).encode())
    assert status == 503 and body["error"]["code"] == "not_configured"


async def test_oversized_body_is_refused(jp_fetch: Any) -> None:
    from jupyter_ext import MAX_ENVELOPE_BYTES

    copies = MAX_ENVELOPE_BYTES // len(CANARY) + 1
    status, body = await _error(jp_fetch, b'{"payload": "' + CANARY.encode() * copies + b'"}')
    assert status == 413 and body["error"]["code"] == "too_large"


async def test_unauthenticated_request_is_refused(jp_fetch: Any) -> None:
    status, _ = await _error(
        jp_fetch, json.dumps(_golden("v2")).encode(), headers={"Authorization": ""}
    )
    assert status == 403


def _signed_by_configured_key(
    jp_serverapp: Any, tmp_path: Path, predicate: dict[str, Any]
) -> bytes:
    """A v2 statement around ``predicate``, signed by a new key this server now trusts."""
    import rfc8785
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ledger.certificates import keyid_of

    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "issuer.pub.pem"
    pem.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for ext in jp_serverapp.extension_manager.extensions["jupyter_ext"].extension_points.values():
        ext.app.issuer_key = str(pem)
    statement = json.loads(base64.b64decode(_golden("v2")["payload"]))
    statement["predicate"] = {**predicate, "issuer": keyid_of(key.public_key())}
    payload = rfc8785.dumps(statement)
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %b %d %b" % (len(ptype), ptype, len(payload), payload)
    envelope = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": ptype.decode(),
        "signatures": [{"sig": base64.b64encode(key.sign(pae)).decode()}],
    }
    return json.dumps(envelope).encode()


def _break(predicate: dict[str, Any], how: str) -> None:
    if how == "flip rate":
        predicate["effect"]["flip_rate"] = 0.05
    elif how == "label":
        predicate["classification"] = "equivalent"
    elif how == "unknown key":
        predicate[CANARY] = CANARY
    elif how == "layer named by the payload":
        predicate["baseline"]["layers"][CANARY] = {"ok": "yes"}
    elif how == "flips beyond the samples":
        predicate["effect"]["flips"] = predicate["samples"]["count"] + 1


@pytest.mark.parametrize(
    ("how", "detail"),
    [
        ("flip rate", "/predicate/effect/flip_rate: is not flips out of the sample count"),
        ("label", "/predicate/classification: does not follow from the intervals and tolerances"),
        ("unknown key", "/predicate: additionalProperties"),
        ("layer named by the payload", "/predicate/baseline: anyOf"),
        ("flips beyond the samples", "/predicate: the figures cannot be evaluated"),
    ],
)
async def test_a_signed_certificate_breaking_a_predicate_rule_fails_the_predicate(
    jp_fetch: Any, jp_serverapp: Any, tmp_path: Path, service: _Listener, how: str, detail: str
) -> None:
    predicate = json.loads(base64.b64decode(_golden("v2")["payload"]))["predicate"]
    predicate["request"]["purpose_note"] = CANARY  # the request admits further fields
    passing = await _verify(jp_fetch, _signed_by_configured_key(jp_serverapp, tmp_path, predicate))
    assert passing["ok"] is True, passing
    _break(predicate, how)
    report = await _verify(jp_fetch, _signed_by_configured_key(jp_serverapp, tmp_path, predicate))
    assert report["ok"] is False
    assert _names(report) == [
        ("envelope", True),
        ("signature", True),
        ("statement", True),
        ("predicate", False),
    ]
    assert report["checks"][3]["detail"] == detail
    assert find_canaries(json.dumps(report).encode(), [CANARY]) == []
    assert service.accepted == 0
