"""Release reports in a real browser: a signed report made by ``replay-enclave regress``
on a stack of this module's own (its audits stay out of the other tests' lists; a
candidate that changes the must-hold procurement specimen's decision),
listed in alice's Enclave sidebar with its gate badge, opened in the viewer as a report
(the gate verdict, the failing must-hold specimen, the not-auditable rows with their
reasons, the digests) and verified in the browser and on the server; the same report
with one byte of its payload changed fails Verify at the signature on both sides. Its
bundle, saved beside it, is verified offline in the browser and by the server with the
issuer's and the log's keys (six checks each), and a bundle whose report entry's proof
is cut fails at the ledger entry on both sides. The
tenant wall holds through the extension (eve, of another tenant: 404; bob, a viewer:
refused). A canary scan of the DOM, every HTTP response and WebSocket frame, and the
saved report; a screenshot of the report view for the README.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import REPORT_BUNDLE_CHECK_NAMES

from .conftest import Recorder, SwitchableLab, _start_lab, assert_no_canary, lab_settings
from .stack import EnclaveStack, regress_report, start_stack, stop

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"
SIDEBAR = "#replay-enclave-sidebar"
VIEWER = ".jp-MainAreaWidget:not(.lm-mod-hidden) .enclave-certificate-viewer"
CHECKS = ["envelope", "signature", "statement", "predicate"]
BUNDLE_CHECKS = list(REPORT_BUNDLE_CHECK_NAMES)
CLI = [sys.executable, "-c", "from enclave.cli import main; main()"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnclaveStack]:
    """A stack for this module: regress runs its jobs itself (``--local``)."""
    started = start_stack(tmp_path_factory.mktemp("enclave-reports"), worker=False)
    yield started
    stop(started.procs)


@pytest.fixture(scope="module")
def report(stack: EnclaveStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return regress_report(stack, tmp_path_factory.mktemp("regress"))


@pytest.fixture(scope="module")
def alice_lab(
    stack: EnclaveStack, report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SwitchableLab]:
    """A JupyterLab speaking for alice (the token file switches who it speaks for), whose
    browser trusts the issuer's key (it exists once ``report`` is signed)."""
    assert report["signatures"]
    base = tmp_path_factory.mktemp("lab-reports")
    token_file = base / "analyst.token"
    log_key = subprocess.run(
        [*CLI, "ledger", "checkpoint", "--public-key", "--home", str(stack.home)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout.strip()
    lab = _start_lab(
        base,
        stack,
        {"REPLAY_ENCLAVE_TOKEN_FILE": str(token_file), "REPLAY_ENCLAVE_LOG_KEY": log_key},
        stack.issuer_key,
    )
    switchable = SwitchableLab(
        url=lab.url, token=lab.token, root=lab.root, proc=lab.proc, token_file=token_file
    )
    switchable.act_as(stack.tokens["alice"])
    shutil.copyfile(stack.issuer_key, lab.root / "issuer.pub.pem")
    lab_settings(
        switchable,
        "replay-enclave:plugin",
        {"trustedKeyPath": "issuer.pub.pem", "trustedLogKey": log_key},
    )
    yield switchable
    stop([lab.proc])


def _predicate(envelope: dict[str, Any]) -> dict[str, Any]:
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def _open_lab(page: Any, lab: SwitchableLab) -> None:
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def _get(page: Any, route: str) -> tuple[int, str]:
    """``GET /enclave/api/<route>`` from the page: status and the error code (if any)."""
    answer = page.evaluate(
        """async (route) => {
             const r = await fetch('/enclave/api/' + route);
             const body = await r.json();
             return [r.status, body && body.error ? body.error.code : ''];
           }""",
        route,
    )
    return int(answer[0]), str(answer[1])


def _cells(viewer: Any, side: str, names: list[str] = CHECKS) -> list[str | None]:
    return [
        viewer.locator(
            f".enclave-verify-check[data-name='{name}'] .enclave-verify-cell[data-side='{side}']"
        ).get_attribute("data-ok")
        for name in names
    ]


def _verify(viewer: Any) -> Any:
    viewer.locator("button.enclave-verify-button").click()
    result = viewer.locator(".enclave-verification")
    result.wait_for()
    return result


def _open(page: Any, path: str) -> None:
    """Open ``path`` (under the lab's root): a bundle opens in the certificate viewer."""
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", path)


def _shoot(page: Any, name: str) -> None:
    viewer = page.locator(VIEWER)
    box = viewer.bounding_box()
    end = viewer.locator(".enclave-issued").bounding_box()
    assert box is not None and end is not None
    clip = {**box, "height": end["y"] + end["height"] + 12 - box["y"]}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), clip=clip)


def test_alice_opens_a_release_report_from_the_sidebar_and_verifies_it(
    stack: EnclaveStack,
    report: dict[str, Any],
    alice_lab: SwitchableLab,
    recorded_page: tuple[Any, Recorder],
) -> None:
    page, record = recorded_page
    predicate = _predicate(report)
    assert predicate["gate"] == {"passed": False, "failing": [stack.procurement]}
    _open_lab(page, alice_lab)
    page.evaluate("() => window.jupyterapp.commands.execute('replay-enclave:open-sidebar')")
    sidebar = page.locator(SIDEBAR)
    item = sidebar.locator("li.enclave-sb-report")
    item.first.wait_for()
    assert item.count() == 1
    report_id = item.get_attribute("data-report-id")
    assert report_id is not None and re.fullmatch(r"rr-[0-9a-f]{16}", report_id)
    assert item.get_attribute("data-gate-passed") == "false"
    assert item.locator(".enclave-sb-gate").inner_text() == "gate FAILED"
    assert item.locator(".enclave-sb-report-specimens").inner_text() == "3 specimens"
    assert re.fullmatch(
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", item.locator(".enclave-sb-report-date").inner_text()
    )

    # opened: saved as reports/<id>.dsse.json, the very envelope regress signed
    item.locator("button.enclave-sb-open-report").click()
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-report").wait_for()
    saved = alice_lab.root / "reports" / f"{report_id}.dsse.json"
    assert json.loads(saved.read_text()) == report
    gate = viewer.locator(".enclave-gate")
    assert gate.get_attribute("data-passed") == "false"
    assert stack.procurement in gate.inner_text()
    failing = viewer.locator("tr.enclave-report-row[data-failing='true']")
    assert failing.count() == 1
    assert failing.get_attribute("data-specimen") == stack.procurement
    assert failing.get_attribute("data-label") == "decision-changed"
    assert "fails the gate" in failing.locator(".enclave-report-must-hold").inner_text()
    rows = viewer.locator("tr.enclave-report-row")
    assert rows.count() == 3
    for row in predicate["specimens"]:
        shown = viewer.locator(f"tr.enclave-report-row[data-specimen='{row['specimen']}']")
        assert shown.get_attribute("data-label") == row["label"]
        assert shown.locator(".enclave-report-reason").inner_text() == (row["reason"] or "—")
    # the report's own bound: what the candidate could choose in it
    bound = predicate["disclosure"]
    assert bound == {"bits_per_specimen": 3, "bits": 9}
    assert f"at most {bound['bits']} bits" in viewer.locator(".enclave-report-bound").inner_text()
    facts = viewer.locator(".enclave-report-facts")
    assert (
        facts.locator("dd[data-field='selection digest']").inner_text()
        == (predicate["selection_digest"])
    )
    assert (
        facts.locator("dd[data-field='candidate code digest']").inner_text()
        == (predicate["intervention"]["digest"])
    )
    assert (
        facts.locator(".enclave-report-baseline li").all_inner_texts()
        == (predicate["baseline_code"])
    )
    status = viewer.locator(".enclave-verify-status")
    assert status.get_attribute("data-state") == "unverified"
    assert viewer.locator("button.enclave-verify-button").inner_text() == "Verify report"

    result = _verify(viewer)
    assert result.get_attribute("data-ok") == "true"
    assert _cells(viewer, "browser") == ["true"] * 4
    assert _cells(viewer, "server") == ["true"] * 4
    assert status.get_attribute("data-state") == "verified"
    _shoot(page, "release-report-light.png")

    # one byte of the payload changed (the gate now claims a pass): the view shows what
    # the file says, and Verify fails at the signature on both sides
    tampered = dict(report)
    payload = base64.b64decode(str(report["payload"]))
    assert payload.count(b'"passed":false') == 1
    tampered["payload"] = base64.b64encode(
        payload.replace(b'"passed":false', b'"passed":true ')
    ).decode()
    (alice_lab.root / "tampered-report.dsse.json").write_text(json.dumps(tampered))
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open',"
        " {path: 'tampered-report.dsse.json'})"
    )
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-report .enclave-gate[data-passed='true']").wait_for()
    result = _verify(viewer)
    assert result.get_attribute("data-ok") == "false"
    assert result.get_attribute("data-first-failure") == "signature"
    assert _cells(viewer, "browser") == ["true", "false", "false", "false"]
    assert _cells(viewer, "server") == ["true", "false", "false", "false"]
    assert viewer.locator(".enclave-verify-status").get_attribute("data-state") == "failed"

    # the bundle saved beside it: proven offline, in the browser and on the server
    bundle_path = alice_lab.root / "reports" / f"{report_id}.bundle.json"
    bundle = json.loads(bundle_path.read_text())
    certified = [r for r in predicate["specimens"] if r["certificate"] is not None]
    assert bundle["envelope"] == report and len(bundle["certificates"]) == len(certified) >= 1
    _open(page, f"reports/{report_id}.bundle.json")
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-report .enclave-gate[data-passed='false']").wait_for()
    assert viewer.locator("button.enclave-verify-button").inner_text() == "Verify report"
    result = _verify(viewer)
    assert result.get_attribute("data-ok") == "true"
    assert _cells(viewer, "browser", BUNDLE_CHECKS) == ["true"] * 6
    assert _cells(viewer, "server", BUNDLE_CHECKS) == ["true"] * 6
    # its report entry's proof cut short: both sides fail at the ledger entry
    proof = bundle["report_entry"]["proof"]
    bundle["report_entry"]["proof"] = proof.rstrip("\n").rpartition("\n")[0] + "\n"
    (alice_lab.root / "cut-proof.bundle.json").write_text(json.dumps(bundle))
    _open(page, "cut-proof.bundle.json")
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-report").wait_for()
    result = _verify(viewer)
    assert result.get_attribute("data-ok") == "false"
    assert result.get_attribute("data-first-failure") == "ledger entry"
    assert _cells(viewer, "browser", BUNDLE_CHECKS) == ["true"] * 5 + ["false"]
    assert _cells(viewer, "server", BUNDLE_CHECKS) == ["true"] * 5 + ["false"]

    # the tenant wall, through the extension: eve (globex) is told it does not exist,
    # bob (a viewer) may not read reports at all
    assert _get(page, f"reports/{report_id}") == (200, "")
    alice_lab.act_as(stack.tokens["eve"])
    try:
        assert _get(page, f"reports/{report_id}") == (404, "not_found")
        assert _get(page, f"reports/{report_id}/summary") == (404, "not_found")
        listed = page.evaluate(
            "async () => (await (await fetch('/enclave/api/reports')).json()).items.length"
        )
        assert listed == 0
        alice_lab.act_as(stack.tokens["bob"])
        status_code, _ = _get(page, "reports")
        assert status_code == 403
    finally:
        alice_lab.act_as(stack.tokens["alice"])

    assert_no_canary(record, page, saved)
