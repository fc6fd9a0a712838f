"""The analyst front end: routes, wire objects, rendering, offline verification, magics,
and the server extension (``jp_fetch``) in front of a real ``replay-enclave serve``."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import escape
from pathlib import Path
from typing import Any

import httpx
import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import jupyter_ext
from jupyter_ext import (
    ROUTES,
    AuditRequestBody,
    AuditStatus,
    EnclaveMagics,
    VerifyReport,
    audit_body,
    binned_histogram_svg,
    build_body,
    certificate_html,
    certificate_text,
    clean_query,
    error_html,
    histogram_svg,
    magic_parser,
    match_route,
    parse_tolerances,
    policy_options,
    verify_envelope_offline,
    verify_file,
    verify_html,
)

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def test_importing_the_front_loads_none_of_its_parts() -> None:
    """``import jupyter_ext`` (what Jupyter does to find the server extension) stays
    cheap: the client, the widgets, the server and the verifier load on first use."""
    import subprocess
    import sys

    code = "import sys, jupyter_ext\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy = ("httpx", "ipywidgets", "IPython", "jupyter_server", "cryptography", "rfc8785")
    loaded = done.stdout.split()
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
    assert [m for m in loaded if m.startswith("jupyter_ext.")] == ["jupyter_ext._errors"]


def test_the_issuer_key_is_read_by_the_verifier(tmp_path: Path) -> None:
    """The offline verifier loads the key as ``ledger.certificates`` does; the magic
    shows its refusal as bad input, in its words."""
    from ledger.certificates import BadCertificateInput

    key = tmp_path / "issuer.pub.pem"
    key.write_text("not a key")
    envelope = GOLDEN / "certificate_v2.dsse.json"
    with pytest.raises(BadCertificateInput, match="not a PEM public key"):
        verify_file(str(envelope), str(key))
    rendered = EnclaveMagics(shell=None).enclave(f"verify {envelope} --key {key} --offline")
    assert 'data-code="bad_input"' in rendered.html and "not a PEM public key" in rendered.text


def test_no_enclave_internals_or_ledger_imports() -> None:
    # the verifier's fronts only (the offline verifier's predicate rules; the log's
    # verifier key for a bundle)
    source = "\n".join(p.read_text() for p in Path(jupyter_ext.__file__).parent.glob("*.py"))
    imports = re.findall(r"^\s*(?:from|import)\s+((?:enclave|ledger)\b\S*)", source, re.M)
    assert set(imports) <= {"ledger.certificates", "ledger.certificates.tlog"}


# -- routes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "name"),
    [
        ("GET", "whoami", "whoami"),
        ("GET", "specimens", "specimens"),
        ("GET", "specimens/sp-bb308fed4aad0338", "specimen"),
        ("POST", "audits", "request_audit"),
        ("POST", "audits/au-1/cancel", "cancel_audit"),
        ("GET", "certificates/au-1/summary", "certificate_summary"),
        ("GET", "certificates/au-1/verify", "certificate_verify"),
        ("GET", "certificates/au-1/bundle", "certificate_bundle"),
        ("GET", "reports/rr-0123456789abcdef/bundle", "report_bundle"),
        ("GET", "ledger/verify", "ledger_verify"),
    ],
)
def test_known_routes(method: str, path: str, name: str) -> None:
    route = match_route(method, path)
    assert route is not None and route.name == name


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "payloads/sp-1"),
        ("DELETE", "audits/au-1"),
        ("POST", "whoami"),
        ("GET", "specimens/../keys"),
        ("GET", "specimens/a/b"),
        ("GET", "certificates/%2e%2e"),
        ("GET", "specimens/" + "a" * 200),
        ("GET", ""),
        ("GET", "audits/au-1/cancel"),
    ],
)
def test_unknown_routes_refused(method: str, path: str) -> None:
    assert match_route(method, path) is None


def test_query_keys_are_per_route() -> None:
    specimens = match_route("GET", "specimens")
    assert specimens is not None
    cleaned = clean_query(specimens, {"tenant": "acme", "agent": "", "payload": "x", "limit": "5"})
    assert cleaned == {"tenant": "acme", "limit": "5"}
    assert all(r.method in ("GET", "POST") for r in ROUTES)


# -- wire objects -------------------------------------------------------------------


def test_audit_body_revision_and_field_forms() -> None:
    rev = AuditRequestBody(
        specimen_id="sp-1",
        purpose="po review",
        revision="model=r2",
        samples=40,
        seed=7,
        tolerances={"score": 0.001},
    )
    assert rev.to_dict() == {
        "specimen_id": "sp-1",
        "purpose": "po review",
        "samples": 40,
        "seed": 7,
        "strategy": "revision",
        "revision": "model=r2",
        "tolerances": {"score": 0.001},
    }
    rep = AuditRequestBody(
        specimen_id="sp-1",
        purpose="p",
        call_id="main/supplier_risk#0",
        field="/confidence",
        strategy="REPLACE",
        value=0.56,
        has_value=True,
    )
    assert rep.to_dict()["value"] == 0.56 and rep.to_dict()["strategy"] == "replace"
    nul = AuditRequestBody(
        specimen_id="sp-1", purpose="p", call_id="c", field="/f", strategy="NULLIFY"
    )
    assert "value" not in nul.to_dict()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"purpose": "  "},
        {"specimen_id": ""},
        {"revision": "model=r2", "samples": 0},
        {"revision": "model=r2", "seed": -1},
    ],
)
def test_audit_body_refuses_incomplete_requests(kwargs: dict[str, Any]) -> None:
    # the intervention itself is judged by the service's intervention model:
    # tests/validity/test_validity_values.py sends the same bad interventions through this client
    base: dict[str, Any] = {"specimen_id": "sp-1", "purpose": "po review"}
    with pytest.raises(ValueError):
        AuditRequestBody(**{**base, **kwargs})


def test_audit_status_round_trip_and_refusal() -> None:
    raw = {
        "audit_id": "au-1",
        "status": "RUNNING",
        "progress_done": 3,
        "progress_total": 10,
        "classification": None,
        "auditability": None,
        "failure_code": None,
        "has_certificate": False,
        "created_at": "t0",
        "updated_at": "t1",
    }
    status = AuditStatus.from_dict(raw)
    assert status.fraction == pytest.approx(0.3) and not status.terminal
    assert AuditStatus.from_dict(status.to_dict()) == status
    with pytest.raises(jupyter_ext.BadResponse):
        AuditStatus.from_dict({**raw, "status": "DONE"})


def test_verify_report_needs_every_check() -> None:
    ok = {"ok": True, "checks": [{"step": 1, "name": "envelope", "ok": True, "detail": "d"}]}
    assert VerifyReport.from_dict(ok).ok
    lying = {"ok": True, "checks": [{"step": 1, "name": "envelope", "ok": False, "detail": ""}]}
    assert not VerifyReport.from_dict(lying).ok
    assert not VerifyReport.from_dict({"ok": True, "checks": []}).ok


# -- the request form's pure parts --------------------------------------------------


def test_tolerances_and_policy_choice() -> None:
    assert parse_tolerances("score=0.001, readback=ignore") == {
        "score": 0.001,
        "readback": "ignore",
    }
    with pytest.raises(ValueError):
        parse_tolerances("score")
    policies = [
        {
            "id": "pol-a",
            "version": 1,
            "tool": "supplier_risk",
            "schema_id": "s",
            "field": "/confidence",
            "strategy": "REPLACE",
        },
        {
            "id": "pol-b",
            "version": 1,
            "tool": "fraud_score",
            "schema_id": "t",
            "field": "/fraud_score",
            "strategy": "NULLIFY",
        },
    ]
    options = policy_options(policies, {"name": "supplier_risk", "schema_id": "s"})
    assert [o[1]["id"] for o in options[:-1]] == ["pol-a"]
    body = build_body(
        specimen_id="sp-1",
        call_id="main/supplier_risk#0",
        policy=options[0][1],
        value="0.56",
        delta=0.0,
        revision="",
        samples=10,
        seed=1,
        tolerances="",
        purpose="po review",
    )
    assert body.to_dict()["value"] == 0.56 and body.policy_id == "pol-a"
    rev = build_body(
        specimen_id="sp-1",
        call_id=None,
        policy=options[-1][1],
        value="",
        delta=0.0,
        revision="model=r2",
        samples=10,
        seed=1,
        tolerances="",
        purpose="po review",
    )
    assert rev.to_dict()["revision"] == "model=r2"


# -- rendering ----------------------------------------------------------------------


def _summary(**overrides: Any) -> dict[str, Any]:
    summary = {
        "classification": "influential",
        "auditability": {
            "class": "counterfactual-admissible",
            "reason": "tokens re-verified",
            "live_state_fields": [],
        },
        "request": {
            "specimen": "sp-1",
            "call": "main/decider#0",
            "strategy": "REVISION",
            "purpose": "po review",
            "samples": 5,
            "seed": 1,
        },
        "baseline": {
            "reproduced": True,
            "layers": {"score": {"ok": True, "delta": 0.0, "tolerance": 1e-9}},
        },
        "effect": {
            "mean_delta": -0.035,
            "delta_interval": [-0.05, -0.02],
            "flip_rate": 0.6,
            "flip_interval": [0.15, 0.95],
            "baseline_rate": 1.0,
            "intervened_rate": 0.4,
            "histogram": {"edges": [-0.1, -0.05, -0.02, 0.0, 0.1], "counts": [0, 3, 2, 0]},
        },
        "disclosure": {
            "bits": 30.5,
            "resolution": 0.0001,
            "bins": 4,
            "terms": [
                {"field": "/effect/mean_delta", "bits": 14.29},
                {"field": "/effect/histogram", "bits": 16.21},
            ],
        },
        "placebo": {"passed": True, "max_abs_delta": 0.0, "flips": 0},
        "lineage": [{"kind": "replays", "job": "au-1", "baseline": 6}],
        "not_established": ["generalisation beyond this specimen"],
        "issued_at": "2026-01-01T00:00:00Z",
        "issuer": "sha256:" + "0" * 64,
    }
    summary.update(overrides)
    return summary


def test_histogram_counts_every_delta_and_marks_the_interval() -> None:
    deltas = [(-1) ** i * i / 100 for i in range(37)]
    svg = histogram_svg(deltas, [-0.1, 0.1])
    bars = [int(n) for n in re.findall(r'class="enclave-bar" data-n="(\d+)"', svg)]
    assert sum(bars) == 37
    assert 'class="enclave-interval" data-low="-0.100000" data-high="0.100000"' in svg
    assert "enclave-empty" in histogram_svg([])


def test_binned_histogram_draws_the_certificate_counts() -> None:
    svg = binned_histogram_svg([-0.1, -0.05, 0.0, 0.1], [2, 5, 0], [-0.06, -0.01], -0.03)
    bars = [int(n) for n in re.findall(r'class="enclave-bar" data-n="(\d+)"', svg)]
    assert bars == [2, 5]
    assert 'data-mean="-0.030000"' in svg and "enclave-interval" in svg
    assert "enclave-empty" in binned_histogram_svg([0.0, 1.0], [0])
    assert "enclave-empty" in binned_histogram_svg([0.0, 1.0], [1, 2])  # counts != bins


def test_certificate_view_states_the_disclosure_bound() -> None:
    html = certificate_html(_summary(), audit_id="au-1")
    assert 'class="enclave-disclosure" data-bits="30.50"' in html
    assert "30.50 bits" in html and "/effect/histogram" in html
    assert "disclosure bound: 30.50 bits" in certificate_text(_summary())
    assert 'data-bits="none"' in certificate_html(_summary(disclosure=None))


def test_certificate_view_has_its_parts() -> None:
    html = certificate_html(_summary(), audit_id="au-1")
    for css in (
        "enclave-classification",
        "enclave-histogram",
        "enclave-layers",
        "enclave-effect",
        "enclave-placebo",
        "enclave-lineage",
        "enclave-not-established",
    ):
        assert css in html
    assert 'data-classification="influential"' in html and 'data-passed="true"' in html
    observable = certificate_html(
        _summary(effect=None, placebo=None, classification="observable-only"), audit_id="au-2"
    )
    assert "enclave-histogram" not in observable and "No effect is reported" in observable


def test_rendering_escapes_everything() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    html = certificate_html(
        _summary(classification=hostile, not_established=[hostile]), audit_id=hostile
    )
    assert "<img" not in html
    refused = jupyter_ext.ServiceRefused(status=403, code="forbidden", message=hostile)
    assert "<img" not in error_html(refused) and 'data-status="403"' in error_html(refused)
    report = VerifyReport.from_dict(
        {"ok": False, "checks": [{"step": 1, "name": hostile, "ok": False, "detail": hostile}]}
    )
    assert "<img" not in verify_html(report)


# -- offline verification -----------------------------------------------------------


def _sign(
    statement: dict[str, Any], key: Ed25519PrivateKey, *, canonical: bool = True
) -> dict[str, Any]:
    payload = rfc8785.dumps(statement) if canonical else json.dumps(statement, indent=1).encode()
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %b %d %b" % (len(ptype), ptype, len(payload), payload)
    return {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": ptype.decode(),
        "signatures": [{"sig": base64.b64encode(key.sign(pae)).decode()}],
    }


def _keyid(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _statement(issuer: str) -> dict[str, Any]:
    golden = json.loads((GOLDEN / "certificate_v2.dsse.json").read_text())
    predicate = json.loads(base64.b64decode(golden["payload"]))["predicate"]
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "specimen:sp-1", "digest": {"sha256": "ab" * 32}}],
        "predicateType": "https://replay-enclave.dev/certificate/v2",
        "predicate": {**predicate, "issuer": issuer},
    }


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_golden_certificates_verify_offline(version: str) -> None:
    report = verify_file(
        str(GOLDEN / f"certificate_{version}.dsse.json"),
        str(GOLDEN / f"certificate_{version}.pub.pem"),
    )
    assert report.ok and [c.name for c in report.checks] == [
        "envelope",
        "signature",
        "statement",
        "predicate",
    ]
    assert f"certificate {version}" in report.checks[-1].detail


def test_offline_verification_fails_where_it_should() -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    good = _sign(_statement(_keyid(key)), key)
    assert verify_envelope_offline(good, key.public_key()).ok

    def first_failure(envelope: Any, public: Any = None) -> str:
        report = verify_envelope_offline(envelope, public or key.public_key())
        assert not report.ok
        return next(c.name for c in report.checks if not c.ok)

    assert first_failure(good, other.public_key()) == "signature"
    tampered = dict(
        good,
        payload=base64.b64encode(
            base64.b64decode(good["payload"]).replace(b"influential", b"influentiaL")
        ).decode(),
    )
    assert first_failure(tampered) == "signature"
    assert first_failure({**good, "extra": 1}) == "envelope"
    assert first_failure(dict(good, payloadType="text/plain")) == "envelope"
    assert first_failure(_sign(_statement(_keyid(key)), key, canonical=False)) == "statement"
    assert first_failure(_sign(_statement(_keyid(other)), key)) == "statement"
    unknown = {
        **_statement(_keyid(key)),
        "predicateType": "https://replay-enclave.dev/certificate/v9",
    }
    assert first_failure(_sign(unknown, key)) == "statement"
    broken = _statement(_keyid(key))
    broken["predicate"]["samples"]["seeds"] = "41..61"  # the seeds no longer spell count
    assert first_failure(_sign(broken, key)) == "predicate"
    assert first_failure(None) == "envelope"


# -- magics ---------------------------------------------------------------------------


def test_magic_audit_options_match_the_cli() -> None:
    args = magic_parser().parse_args(
        [
            "audit",
            "sp-1",
            "--revision",
            "model=r2",
            "--samples",
            "30",
            "--seed",
            "5",
            "--tolerance",
            "score=0.001",
            "--tolerance",
            "readback=ignore",
            "--purpose",
            "would the order have been approved on r2?",
        ]
    )
    body = audit_body(args).to_dict()
    assert body == {
        "specimen_id": "sp-1",
        "purpose": "would the order have been approved on r2?",
        "samples": 30,
        "seed": 5,
        "strategy": "revision",
        "revision": "model=r2",
        "tolerances": {"score": 0.001, "readback": "ignore"},
    }
    args = magic_parser().parse_args(
        [
            "audit",
            "sp-1",
            "--call",
            "main/supplier_risk#0",
            "--field",
            "confidence",
            "--strategy",
            "replace",
            "--value",
            "0.56",
            "--purpose",
            "p",
        ]
    )
    body = audit_body(args).to_dict()
    assert (
        body["field"] == "/confidence" and body["strategy"] == "replace" and body["value"] == 0.56
    )


def test_magic_usage_errors_render_without_raising() -> None:
    magics = EnclaveMagics(shell=None)
    missing = magics.enclave("audit sp-1 --revision model=r2")
    assert "purpose" in repr(missing) and "enclave-error" in missing._repr_html_()
    # no intervention: the service's intervention model judges it (none is configured here)
    bad = magics.enclave("audit sp-1 --purpose p")
    assert "enclave-error" in bad._repr_html_()
    assert "usage" in repr(magics.enclave("frobnicate"))


# -- the server extension in front of a real enclave service ----------------------------

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture(scope="module")
def enclave(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.browser.stack import start_stack, stop

    stack = start_stack(tmp_path_factory.mktemp("enclave"), worker=False)
    yield stack
    stop(stack.procs)


@pytest.fixture
def jp_server_config(enclave: Any) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "EnclaveExtension": {"service_url": enclave.url, "token_env": "TEST_ANALYST_TOKEN"},
    }


def _error(exc: Any) -> tuple[int, dict[str, Any]]:
    body = exc.response.body
    assert b"Traceback" not in body and b"\n" not in body.strip()
    return exc.code, json.loads(body)


async def test_unauthenticated_request_is_refused(
    jp_fetch: Any, enclave: Any, monkeypatch: Any
) -> None:
    from tornado.httpclient import HTTPClientError

    monkeypatch.setenv("TEST_ANALYST_TOKEN", enclave.tokens["alice"])
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("enclave", "api", "specimens", headers={"Authorization": ""})
    assert refused.value.code == 403
    assert b"sp-" not in refused.value.response.body


async def test_analyst_reads_metadata_through_the_extension(
    jp_fetch: Any, enclave: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TEST_ANALYST_TOKEN", enclave.tokens["alice"])
    me = json.loads((await jp_fetch("enclave", "api", "whoami")).body)
    assert me == {"name": "alice", "tenant": "acme", "roles": ["auditor", "restricted-clearance"]}
    page = json.loads(
        (
            await jp_fetch(
                "enclave", "api", "specimens", params={"agent": "procurement", "limit": "5"}
            )
        ).body
    )
    assert [i["specimen_id"] for i in page["items"]] == [enclave.procurement]
    detail = json.loads((await jp_fetch("enclave", "api", "specimens", enclave.procurement)).body)
    assert any(c["call_id"] == "main/decider#0" and c["resolved"] == "r1" for c in detail["calls"])


async def test_denial_passes_through_as_the_service_gave_it(
    jp_fetch: Any, enclave: Any, monkeypatch: Any
) -> None:
    from tornado.httpclient import HTTPClientError

    monkeypatch.setenv("TEST_ANALYST_TOKEN", enclave.tokens["bob"])
    body = {
        "specimen_id": enclave.procurement,
        "strategy": "revision",
        "revision": "model=r2",
        "samples": 10,
        "seed": 1,
        "purpose": "dispute review",
    }
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("enclave", "api", "audits", method="POST", body=json.dumps(body))
    direct = httpx.post(
        f"{enclave.url}/api/v1/audits",
        json=body,
        headers={"Authorization": f"Bearer {enclave.tokens['bob']}"},
    )
    status, error = _error(refused.value)
    assert (status, error) == (direct.status_code, direct.json())
    assert status == 403 and error["error"]["code"] == "restricted_needs_clearance"


async def test_only_known_routes_are_forwarded(
    jp_fetch: Any, enclave: Any, monkeypatch: Any
) -> None:
    from tornado.httpclient import HTTPClientError

    monkeypatch.setenv("TEST_ANALYST_TOKEN", enclave.tokens["alice"])
    for parts in (("openapi.json",), ("specimens", "..", "whoami"), ("payloads", "x")):
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("enclave", "api", *parts)
        assert refused.value.code == 404


async def test_service_down_is_a_clear_502(
    jp_fetch: Any, jp_serverapp: Any, enclave: Any, monkeypatch: Any
) -> None:
    from tornado.httpclient import HTTPClientError

    from tests.browser.stack import free_port

    monkeypatch.setenv("TEST_ANALYST_TOKEN", enclave.tokens["alice"])
    down = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(jp_serverapp.web_app.settings["jupyter_ext"], "service_url", down)
    with pytest.raises(HTTPClientError) as failed:
        await jp_fetch("enclave", "api", "specimens")
    status, error = _error(failed.value)
    assert status == 502
    assert error == {
        "error": {
            "code": "service_unavailable",
            "message": f"the enclave service at {down} is not reachable",
        }
    }


async def test_missing_credential_is_named(jp_fetch: Any, monkeypatch: Any) -> None:
    from tornado.httpclient import HTTPClientError

    monkeypatch.delenv("TEST_ANALYST_TOKEN", raising=False)
    with pytest.raises(HTTPClientError) as failed:
        await jp_fetch("enclave", "api", "whoami")
    status, error = _error(failed.value)
    assert status == 503 and "TEST_ANALYST_TOKEN" in error["error"]["message"]


def test_client_against_the_service(enclave: Any) -> None:
    with jupyter_ext.EnclaveClient(base_url=enclave.url, token=enclave.tokens["bob"]) as bob:
        with pytest.raises(jupyter_ext.ServiceRefused) as refused:
            bob.specimen(enclave.procurement)
    assert refused.value.status == 403 and refused.value.code == "restricted_needs_clearance"
    with jupyter_ext.EnclaveClient(base_url=enclave.url, token=enclave.tokens["alice"]) as alice:
        with pytest.raises(jupyter_ext.ServiceRefused) as ledger_refused:
            alice.ledger_verify()  # the chain spans tenants: operators only
        assert ledger_refused.value.status == 403
        assert {p["id"] for p in alice.policies()} >= {"procurement.decider-model.revision"}
    with jupyter_ext.EnclaveClient(base_url="http://127.0.0.1:9", token="t") as nowhere:
        with pytest.raises(jupyter_ext.ServiceUnavailable):
            nowhere.whoami()


def test_the_panel_form_starts_an_audit_from_a_recorded_cut(enclave: Any) -> None:
    from jupyter_ext import REVISION, cut_options

    with jupyter_ext.EnclaveClient(base_url=enclave.url, token=enclave.tokens["alice"]) as alice:
        detail = alice.specimen(enclave.procurement)
        options = cut_options(detail)
        # the full replay first, then the cuts in the order the run reached them
        assert [value for _label, value in options] == [
            None,
            "before-retrieval",
            "before-authority",
        ]

        def body(from_cut: str | None, per_sample: bool = False) -> Any:
            return build_body(
                specimen_id=enclave.procurement,
                call_id=None,
                policy=REVISION,
                value="",
                delta=None,
                revision="model=r2",
                samples=4,
                seed=1,
                tolerances="",
                purpose="po review from a cut",
                from_cut=from_cut,
                per_sample=per_sample,
            )

        assert "from_cut" not in body(None).to_dict()
        assert "detail" not in body(None).to_dict()
        # every count only where a policy grants it: these policies do not
        assert body(None, per_sample=True).to_dict()["detail"] == "per-sample"
        with pytest.raises(jupyter_ext.ServiceRefused) as refused:
            alice.request_audit(body(None, per_sample=True))
        assert (refused.value.status, refused.value.code) == (403, "detail_not_granted")
        queued = alice.request_audit(body("before-retrieval"))
        assert queued.status == "QUEUED"
        with pytest.raises(jupyter_ext.ServiceRefused) as refused:
            alice.request_audit(body("no-such-cut"))
        assert 400 <= refused.value.status < 500 and "no-such-cut" not in str(refused.value)


def test_a_cursor_page_claims_no_position_it_does_not_know() -> None:
    """Pages come by cursor: the magic cannot say where a page starts, the panel can."""
    from jupyter_ext import specimens_html

    page = {"items": [{"specimen_id": "sp-a"}, {"specimen_id": "sp-b"}], "total": 12}
    assert "specimens 2 of 12" in specimens_html(page)
    assert "specimens 11–12 of 12" in specimens_html(page, first=10)
    assert "specimens 0 of 0" in specimens_html({"items": [], "total": 0})


# --- the finding: the card, the status and the report open with it -------------------


def _golden_predicate() -> dict[str, Any]:
    golden = Path(__file__).resolve().parents[2] / "golden" / "certificate_v2.statement.json"
    predicate: dict[str, Any] = json.loads(golden.read_text())["predicate"]
    return predicate


def test_the_certificate_card_opens_with_its_finding() -> None:
    from ledger.certificates import PREDICATE_TYPE_V2, finding

    predicate = _golden_predicate()
    sentence = finding(predicate, PREDICATE_TYPE_V2)
    html = certificate_html(predicate, audit_id="au-1")
    stated = f'<p class="enclave-finding" data-source="certificate">{escape(sentence)}</p>'
    assert stated in html
    assert html.index(stated) < html.index('class="enclave-classification"')
    assert certificate_text(predicate).splitlines()[1] == sentence


def test_a_card_whose_figures_fail_their_checks_states_no_finding() -> None:
    predicate = _golden_predicate()
    predicate["effect"]["flips"] = 19  # the rows say 13
    html = certificate_html(predicate, audit_id="au-1")
    assert "No finding: this certificate&#x27;s figures do not pass their checks." in html
    assert "19 of 20" not in html
    assert "No finding" in certificate_text(_summary())  # a summary short of a predicate


def test_status_and_report_carry_the_services_finding_escaped() -> None:
    hostile = "<img src=x onerror=alert(1)> changed the decision"
    status = AuditStatus.from_dict({"audit_id": "au-1", "status": "COMPLETED", "finding": hostile})
    assert status.finding == hostile
    ok = {"ok": True, "checks": [{"step": 1, "name": "envelope", "ok": True, "detail": "d"}]}
    report = VerifyReport.from_dict({**ok, "finding": hostile})
    assert report.finding == hostile
    html = verify_html(report)
    assert 'class="enclave-finding" data-source="verifier"' in html and "<img" not in html
    failed = {**ok, "ok": False}  # a failed report states none, whatever it carries
    assert VerifyReport.from_dict({**failed, "finding": hostile}).finding is None


def test_a_v3_card_shows_the_interval_and_coarse_figures_without_per_sample_bins() -> None:
    from ledger.certificates import PREDICATE_TYPE, finding

    golden = Path(__file__).resolve().parents[2] / "golden" / "certificate_v3.statement.json"
    predicate = json.loads(golden.read_text())["predicate"]
    html = certificate_html(predicate, audit_id="au-3")
    assert escape(finding(predicate, PREDICATE_TYPE)) in html
    assert 'class="enclave-delta-chart"' in html and "enclave-bar" not in html
    low, high = predicate["effect"]["delta_interval"]
    assert f'data-low="{low:.6f}" data-high="{high:.6f}"' in html
    assert 'class="enclave-equivalence"' in html
