"""A certificate bundle (``*.bundle.json``) in the certificate viewer, in a real browser:
double-click opens it, the viewer shows its envelope's certificate, and Verify runs the
browser's seven bundle checks (with the trusted issuer key and the trusted log key from
the settings) beside the Jupyter server's (with the log key configured there); a bundle
whose certificate-entry proof was tampered with fails ``ledger_entry`` on both. The bundles are
the parity corpus's (``tests/unit/certificates/bundle_corpus.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import BUNDLE_CHECK_NAMES
from tests.unit.certificates import bundle_corpus

from .conftest import Lab, Recorder, lab_settings
from .test_certificate_viewer import VIEWER, verify_cells

pytestmark = pytest.mark.slow


def _cells(page: Any, side: str) -> list[str | None]:
    return verify_cells(page, side, BUNDLE_CHECK_NAMES)


def _folder(lab: Lab) -> None:
    corpus = json.loads(bundle_corpus.TARGET.read_text())
    cases = {case["name"]: case for case in corpus["cases"]}
    for file, name in (("good", "valid"), ("tampered", "certificate proof hash")):
        bundle = bundle_corpus.expand(corpus, cases[name])
        (lab.root / f"{file}.bundle.json").write_text(json.dumps(bundle))
    (lab.root / "issuer.pub.pem").write_text(corpus["issuer_pem"])
    lab_settings(
        lab,
        "replay-enclave:plugin",
        {"trustedKeyPath": "issuer.pub.pem", "trustedLogKey": corpus["log_key"]},
    )


def _open(page: Any, name: str) -> Any:
    page.locator(".jp-DirListing-itemText", has_text=name).first.dblclick()
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-certificate").wait_for()
    return viewer


def test_bundle_viewer_runs_the_bundle_checks_in_the_browser(
    lab_trusting: Any, recorded_page: tuple[Any, Recorder], tmp_path: Path
) -> None:
    page, _record = recorded_page
    corpus = json.loads(bundle_corpus.TARGET.read_text())
    pem = tmp_path / "issuer.pub.pem"
    pem.write_text(corpus["issuer_pem"])
    lab = lab_trusting("alice", pem, corpus["log_key"])
    _folder(lab)
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")

    viewer = _open(page, "good.bundle.json")
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "unverified"
    viewer.locator("button.enclave-verify-button").click()
    report = viewer.locator(".enclave-verification[data-ok='true']")
    report.wait_for()
    assert _cells(page, "browser") == ["true"] * 7
    assert _cells(page, "server") == ["true"] * 7  # the Jupyter server has the log key too
    server = viewer.locator(".enclave-verify-summary[data-side='server']")
    assert server.get_attribute("data-ok") == "true"
    assert viewer.locator(".enclave-verified-finding").get_attribute("data-agree") == "true"
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "verified"

    viewer = _open(page, "tampered.bundle.json")
    viewer.locator("button.enclave-verify-button").click()
    failed = viewer.locator(".enclave-verification[data-ok='false']")
    failed.wait_for()
    assert failed.get_attribute("data-first-failure") == "ledger_entry"
    assert _cells(page, "browser") == ["true"] * 6 + ["false"]
    assert _cells(page, "server") == ["true"] * 6 + ["false"]
    detail = viewer.locator(
        ".enclave-verify-check[data-name='ledger_entry']"
        " .enclave-verify-cell[data-side='browser'] .enclave-verify-detail"
    )
    assert detail.inner_text() == (
        "the certificate entry's proof does not lead to the checkpoint's root"
    )
