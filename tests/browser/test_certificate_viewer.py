"""The JupyterLab certificate viewer in a real browser: a golden certificate and a
tampered copy in the root folder; double-click opens the viewer; Verify runs the browser's
WebCrypto verifier and the server extension's Python one side by side, all checks passing
for the golden and both naming the same failing check for the copy; the file browser's
context menu verifies too; the MIME renderer shows the same view in a notebook output;
screenshots in the light and dark themes; a canary scan of the DOM, every HTTP response
and every WebSocket frame."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .conftest import Lab, Recorder, assert_no_canary, lab_settings

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
SCREENSHOTS = REPO / "docs" / "screenshots"
CHECKS = ["envelope", "signature", "statement"]
MIME = "application/vnd.replay-enclave.certificate+json"
VIEWER = ".jp-MainAreaWidget:not(.lm-mod-hidden) .enclave-certificate-viewer"


def _folder(lab: Lab) -> None:
    shutil.copyfile(GOLDEN / "certificate_v2.dsse.json", lab.root / "certificate.dsse.json")
    shutil.copyfile(GOLDEN / "certificate_v2.pub.pem", lab.root / "issuer.pub.pem")
    tampered = json.loads((GOLDEN / "certificate_v2.dsse.json").read_text())
    payload = bytearray(base64.b64decode(tampered["payload"]))
    payload[payload.index(b'"flips":13') + 9] = ord("2")  # the certificate now claims 12 flips
    tampered["payload"] = base64.b64encode(bytes(payload)).decode()
    (lab.root / "tampered.dsse.json").write_text(json.dumps(tampered))
    # a notebook output carrying the certificate's MIME type (rendered with no kernel code)
    envelope = json.loads((GOLDEN / "certificate_v2.dsse.json").read_text())
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("certificate")]
    notebook.cells[0].outputs = [
        nbformat.v4.new_output("display_data", data={MIME: envelope, "text/plain": "<certificate>"})
    ]
    nbformat.write(notebook, lab.root / "outputs.ipynb")
    # the browser's trusted key: a file the analyst points to in the settings
    lab_settings(lab, "replay-enclave:plugin", {"trustedKeyPath": "issuer.pub.pem"})


def _cells(page: Any, side: str) -> list[str | None]:
    viewer = page.locator(VIEWER)
    return [
        viewer.locator(
            f".enclave-verify-check[data-name='{name}'] .enclave-verify-cell[data-side='{side}']"
        ).get_attribute("data-ok")
        for name in CHECKS
    ]


def _shoot(page: Any, name: str) -> None:
    """The open viewer down to the end of the certificate, for the README."""
    viewer = page.locator(VIEWER)
    box = viewer.bounding_box()
    end = viewer.locator(".enclave-issued").bounding_box()
    assert box is not None and end is not None
    clip = {**box, "height": end["y"] + end["height"] + 12 - box["y"]}
    page.screenshot(path=str(SCREENSHOTS / name), clip=clip)


def test_certificate_viewer_verifies_golden_and_names_the_tampered_check(
    lab_trusting: Any, recorded_page: tuple[Any, Recorder]
) -> None:
    page, record = recorded_page
    lab = lab_trusting("alice", GOLDEN / "certificate_v2.pub.pem")
    _folder(lab)
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")

    # double-click opens the certificate viewer (the default for *.dsse.json)
    page.locator(".jp-DirListing-itemText", has_text="certificate.dsse.json").first.dblclick()
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-certificate").wait_for()
    badge = viewer.locator(".enclave-classification")
    assert badge.get_attribute("data-classification") == "influential"
    assert badge.get_attribute("data-auditability") == "counterfactual-admissible"
    assert viewer.locator(".enclave-question dd[data-field='purpose']").inner_text() == (
        "purchase-order-review"
    )
    assert viewer.locator(".enclave-baseline-layers tbody tr").count() == 4
    assert viewer.locator("svg.enclave-histogram").get_attribute("data-count") == "20"
    assert viewer.locator("svg.enclave-histogram .enclave-bar").count() == 20
    assert viewer.locator("svg.enclave-flip-chart .enclave-interval").count() == 1
    assert viewer.locator(".enclave-served-by-table tbody tr").count() == 10
    assert viewer.locator(".enclave-disclosure").get_attribute("data-bits") == "554.01"
    assert viewer.locator(".enclave-lineage li").count() == 4
    assert viewer.locator(".enclave-not-established li").count() == 4
    status = viewer.locator(".enclave-verify-status")
    assert status.get_attribute("data-state") == "unverified"

    # Verify, from the keyboard: both sides pass every named check
    viewer.locator("button.enclave-verify-button").focus()
    page.keyboard.press("Enter")
    report = viewer.locator(".enclave-verification")
    report.wait_for()
    assert report.get_attribute("data-ok") == "true"
    assert _cells(page, "browser") == ["true"] * 3
    assert _cells(page, "server") == ["true"] * 3
    assert status.get_attribute("data-state") == "verified"

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _shoot(page, "certificate-viewer-light.png")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(300)  # the theme's stylesheet applies after the attribute flips
    _shoot(page, "certificate-viewer-dark.png")

    # the tampered copy, from the file browser's context menu: both sides fail at signature
    page.locator(".jp-DirListing-itemText", has_text="tampered.dsse.json").first.click(
        button="right"
    )
    page.locator(".lm-Menu-itemLabel", has_text="Verify certificate").first.click()
    viewer = page.locator(VIEWER)
    failed = viewer.locator(".enclave-verification[data-ok='false']")
    failed.wait_for()
    assert failed.get_attribute("data-first-failure") == "signature"
    assert _cells(page, "browser") == ["true", "false", "false"]
    assert _cells(page, "server") == ["true", "false", "false"]
    highlighted = viewer.locator(".enclave-first-failure")
    assert highlighted.count() == 1 and highlighted.get_attribute("data-name") == "signature"
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "failed"
    _shoot(page, "certificate-tampered-dark.png")

    # the MIME renderer: the same view in a notebook output, marked unverified
    page.evaluate(
        "async () => { await window.jupyterapp.commands.execute('docmanager:open',"
        " {path: 'outputs.ipynb', factory: 'Notebook'}); }"
    )
    output = page.locator(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .enclave-certificate-output .enclave-certificate"
    )
    output.wait_for()
    assert output.get_attribute("data-version") == "v2"
    assert (
        output.locator(".enclave-classification").get_attribute("data-classification")
        == "influential"
    )
    assert output.locator("svg.enclave-histogram").get_attribute("data-count") == "20"

    assert_no_canary(record, page)
