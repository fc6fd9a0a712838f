"""The JupyterLab certificate viewer in a real browser: a golden certificate and a
tampered copy in the root folder; double-click opens the viewer; Verify runs the browser's
WebCrypto verifier and the server extension's Python one side by side, all checks passing
for the golden and both naming the same failing check for the copy; the file browser's
context menu verifies too; the MIME renderer shows the same view in a notebook output and
verifies it the same way; a certificate signed by a trusted key whose predicate breaks a
rule fails ``predicate`` on both sides, naming the rule's location; screenshots in the
light and dark themes; a canary scan of the DOM, every HTTP response and every WebSocket
frame."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .conftest import Lab, Recorder, assert_no_canary, lab_settings

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
SCREENSHOTS = REPO / "docs" / "screenshots"
CHECKS = ["envelope", "signature", "statement", "predicate"]
MIME = "application/vnd.replay-enclave.certificate+json"
VIEWER = ".jp-MainAreaWidget:not(.lm-mod-hidden) .enclave-certificate-viewer"
# the golden's finding (ledger.certificates.finding), as every view states it
GOLDEN_FINDING = (
    "Replacing /model/revision in call decide-1 changed the decision in 13 of 20 paired runs "
    "(65%, 95% interval 40–85%); the score moved by −0.041 (95% interval −0.049 to −0.032). "
    "Counterfactual-admissible: every effect re-verified; no live state read after departure."
)


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


def verify_cells(page: Any, side: str, names: Sequence[str] = CHECKS) -> list[str | None]:
    """Each named check's verdict in the open viewer's ``side`` column."""
    viewer = page.locator(VIEWER)
    return [
        viewer.locator(
            f".enclave-verify-check[data-name='{name}'] .enclave-verify-cell[data-side='{side}']"
        ).get_attribute("data-ok")
        for name in names
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
    stated = viewer.locator(".enclave-finding")
    assert stated.get_attribute("data-finding") == "stated"
    assert stated.inner_text() == GOLDEN_FINDING
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
    assert verify_cells(page, "browser") == ["true"] * 4
    assert verify_cells(page, "server") == ["true"] * 4
    assert status.get_attribute("data-state") == "verified"
    verified = report.locator(".enclave-verified-finding")
    assert verified.get_attribute("data-agree") == "true"  # the server's sentence too
    assert verified.inner_text() == f"Verified finding: {GOLDEN_FINDING}"

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
    assert verify_cells(page, "browser") == ["true", "false", "false", "false"]
    assert verify_cells(page, "server") == ["true", "false", "false", "false"]
    highlighted = viewer.locator(".enclave-first-failure")
    assert highlighted.count() == 1 and highlighted.get_attribute("data-name") == "signature"
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "failed"
    # 12 flips against 13 rows: the figures fail their checks, so no sentence is stated
    assert viewer.locator(".enclave-finding").get_attribute("data-finding") == "none"
    assert viewer.locator(".enclave-verified-finding").count() == 0
    _shoot(page, "certificate-tampered-dark.png")

    # the MIME renderer: the same view in a notebook output, unverified until Verify
    page.evaluate(
        "async () => { await window.jupyterapp.commands.execute('docmanager:open',"
        " {path: 'outputs.ipynb', factory: 'Notebook'}); }"
    )
    rendered = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .enclave-certificate-output")
    output = rendered.locator(".enclave-certificate")
    output.wait_for()
    assert output.get_attribute("data-version") == "v2"
    assert (
        output.locator(".enclave-classification").get_attribute("data-classification")
        == "influential"
    )
    assert output.locator("svg.enclave-histogram").get_attribute("data-count") == "20"
    status = rendered.locator(".enclave-verify-status")
    assert status.get_attribute("data-state") == "unverified"
    # the notebook names no kernel: dismiss JupyterLab's kernel choice (no kernel is needed)
    page.locator(".jp-Dialog").wait_for()
    page.keyboard.press("Escape")
    page.locator(".jp-Dialog").wait_for(state="detached")
    rendered.locator("button.enclave-verify-button").click()
    rendered.locator(".enclave-verification[data-ok='true']").wait_for()
    for side in ("browser", "server"):
        cells = rendered.locator(f".enclave-verify-cell[data-side='{side}']")
        assert [cells.nth(i).get_attribute("data-ok") for i in range(cells.count())] == ["true"] * 4
    assert status.get_attribute("data-state") == "verified"

    assert_no_canary(record, page)


def _signed_breaking_a_rule(folder: Path) -> Path:
    """The golden v2 statement with a flip rate that is not flips out of N, signed by a
    key of its own; returns the key's PEM (the issuer both verifiers are told to trust)."""
    import rfc8785
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ledger.certificates import keyid_of

    # a fixed seed keeps the README's screenshot of this case the same from run to run
    key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"rule-broken issuer").digest())
    statement = json.loads(
        base64.b64decode(json.loads((GOLDEN / "certificate_v2.dsse.json").read_text())["payload"])
    )
    statement["predicate"]["issuer"] = keyid_of(key.public_key())
    statement["predicate"]["effect"]["flip_rate"] = 0.05  # the certificate counts 13 of 20
    payload = rfc8785.dumps(statement)
    ptype = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %b %d %b" % (len(ptype), ptype, len(payload), payload)
    envelope = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": ptype.decode(),
        "signatures": [{"sig": base64.b64encode(key.sign(pae)).decode()}],
    }
    (folder / "rule-broken.dsse.json").write_text(json.dumps(envelope))
    pem = folder / "rule-issuer.pub.pem"
    pem.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pem


def test_signed_certificate_breaking_a_rule_fails_the_predicate_on_both_sides(
    lab_trusting: Any, recorded_page: tuple[Any, Recorder], tmp_path: Path
) -> None:
    page, record = recorded_page
    pem = _signed_breaking_a_rule(tmp_path)
    lab = lab_trusting("alice", pem)
    shutil.copyfile(tmp_path / "rule-broken.dsse.json", lab.root / "rule-broken.dsse.json")
    shutil.copyfile(pem, lab.root / "issuer.pub.pem")
    lab_settings(lab, "replay-enclave:plugin", {"trustedKeyPath": "issuer.pub.pem"})
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")

    page.locator(".jp-DirListing-itemText", has_text="rule-broken.dsse.json").first.dblclick()
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-certificate").wait_for()
    viewer.locator("button.enclave-verify-button").click()
    failed = viewer.locator(".enclave-verification[data-ok='false']")
    failed.wait_for()
    assert failed.get_attribute("data-first-failure") == "predicate"
    assert verify_cells(page, "browser") == ["true", "true", "true", "false"]
    assert verify_cells(page, "server") == ["true", "true", "true", "false"]
    for side in ("browser", "server"):
        detail = viewer.locator(
            f".enclave-verify-check[data-name='predicate'] .enclave-verify-cell[data-side='{side}']"
            " .enclave-verify-detail"
        )
        assert detail.inner_text() == (
            "/predicate/effect/flip_rate: is not flips out of the sample count"
        )
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "failed"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _shoot(page, "certificate-predicate-failed-light.png")
    assert_no_canary(record, page)
