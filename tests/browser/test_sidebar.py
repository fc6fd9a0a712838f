"""The Enclave sidebar in a real browser, one JupyterLab per analyst for the module.

alice opens the sidebar from the status bar, sees who she is and the specimens, opens the
request form from the launcher, is refused in the browser (and by the service, with the
same code) for an invisible purpose, requests the r2 audit the panel test requests,
watches it complete in the sidebar and the status bar, opens its certificate in the viewer
and verifies it in the browser and on the server. bob (viewer) sees the service's denial
when he tries. alice then requests audits from the procurement specimen's cuts: refused
in the browser or by the service when the target lies before the cut, certified with the
cut otherwise. A canary scan of the DOM, every HTTP response and WebSocket frame, and the
saved certificate; light and dark screenshots of the sidebar and the form for the README.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import Lab, Recorder, SwitchableLab, assert_no_canary, lab_settings
from .stack import EnclaveStack

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"
SIDEBAR = "#replay-enclave-sidebar"
STATUS = ".enclave-status-running"
VIEWER = ".jp-MainAreaWidget:not(.lm-mod-hidden) .enclave-certificate-viewer"
PURPOSE = "Dispute review of PO-2291 on revision r2"
REVISION_POLICY = "procurement.decider-model.revision"


@pytest.fixture(scope="module")
def alice_lab(switchable_lab: SwitchableLab, stack: EnclaveStack) -> SwitchableLab:
    switchable_lab.act_as(stack.tokens["alice"])
    # the browser verifies with the key file the analyst chose (read when Verify runs);
    # the issuer's key exists once the first certificate is signed
    # two specimens a page, so the third comes by the service's cursor
    lab_settings(
        switchable_lab,
        "replay-enclave:plugin",
        {"trustedKeyPath": "issuer.pub.pem", "sidebarPageSize": 2},
    )
    return switchable_lab


@pytest.fixture
def shots() -> Iterator[Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield SCREENSHOTS


def open_lab(page: Any, lab: Lab) -> None:
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")


def dark(page: Any) -> None:
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    # the theme's stylesheet applies after the attribute flips: wait for its colours
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('#replay-enclave-sidebar'))"
        ".backgroundColor !== 'rgb(255, 255, 255)'"
    )


def specimen_count(page: Any, sidebar: Any, expected: str) -> None:
    """Wait until the specimen list counts ``expected``, or fail with what it shows
    instead: its count and the service's refusal, if it gave one."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    count = sidebar.locator(".enclave-sb-specimens .enclave-sb-count")
    error = sidebar.locator(".enclave-sb-specimen-error")
    with contextlib.suppress(PlaywrightTimeout):  # the assertion below says what it shows
        page.wait_for_function(
            "([count, error, expected]) => count.textContent === expected"
            " || error.textContent !== ''",
            arg=[count.element_handle(), error.element_handle(), expected],
        )
    assert (count.inner_text(), error.inner_text()) == (expected, "")


def all_specimens(page: Any, sidebar: Any) -> None:
    """The first page (two of the three), then the rest by the service's cursor."""
    specimen_count(page, sidebar, "2 of 3")
    more = sidebar.locator("button.enclave-sb-more-specimens")
    more.click()
    specimen_count(page, sidebar, "3 of 3")
    assert sidebar.locator(".enclave-sb-table tr[data-specimen-id]").count() == 3
    assert more.is_hidden()  # the service's last page: no cursor


def choose_r2(page: Any, form: Any, specimen: str) -> None:
    form.locator("select.enclave-sb-specimen").select_option(specimen)
    call = form.locator("select.enclave-sb-call")
    page.wait_for_function(
        "(el) => Array.from(el.options).some(o => o.value === 'main/decider#0')",
        arg=call.element_handle(),
    )
    call.select_option("main/decider#0")
    policy = form.locator("select.enclave-sb-policy")
    policy.select_option(label=policy.locator("option", has_text=REVISION_POLICY).inner_text())
    revision = form.locator("input.enclave-sb-revision")
    page.wait_for_function("(el) => el.value === 'model=r2'", arg=revision.element_handle())


def post_audit(page: Any, body: dict[str, Any]) -> tuple[int, str]:
    """The same body straight to the server extension (the service's own answer)."""
    answer = page.evaluate(
        """async (body) => {
             const xsrf = document.cookie.match(/_xsrf=([^;]+)/);
             const r = await fetch('/enclave/api/audits', {method: 'POST',
               headers: {'Content-Type': 'application/json',
                         'X-XSRFToken': xsrf ? decodeURIComponent(xsrf[1]) : ''},
               body: JSON.stringify(body)});
             return [r.status, (await r.json()).error.code];
           }""",
        body,
    )
    return int(answer[0]), str(answer[1])


def test_alice_requests_the_r2_audit_and_verifies_its_certificate_from_the_sidebar(
    stack: EnclaveStack, alice_lab: Lab, recorded_page: tuple[Any, Recorder], shots: Path
) -> None:
    page, record = recorded_page
    open_lab(page, alice_lab)

    # the status bar counts running audits (none yet); a click opens the sidebar
    status = page.locator(STATUS)
    page.wait_for_selector(f"{STATUS}[data-running='0']")
    status.click()
    sidebar = page.locator(SIDEBAR)
    sidebar.wait_for(state="visible")
    who = sidebar.locator(".enclave-sb-whoami")
    who.locator("dd[data-field='name']").wait_for()
    assert who.locator("dd[data-field='name']").inner_text() == "alice"
    assert who.locator("dd[data-field='tenant']").inner_text() == "acme"
    assert "auditor" in who.locator("dd[data-field='roles']").inner_text()
    rows = sidebar.locator(".enclave-sb-table tr[data-specimen-id]")
    all_specimens(page, sidebar)
    assert sorted(rows.nth(i).get_attribute("data-specimen-id") for i in range(3)) == sorted(
        stack.specimens.values()
    )
    # metadata only: a filter by agent narrows the list on the service's side
    agent = sidebar.locator(f"tr[data-specimen-id='{stack.procurement}']").get_attribute(
        "data-agent"
    )
    assert agent
    sidebar.locator("input.enclave-sb-agent").fill(agent)
    sidebar.locator("input.enclave-sb-agent").press("Enter")
    page.wait_for_function(
        "(agent) => { const rows = document.querySelectorAll("
        "'#replay-enclave-sidebar tr[data-specimen-id]');"
        " return rows.length >= 1 && Array.from(rows).every(r => r.dataset.agent === agent)"
        " && document.querySelector('#replay-enclave-sidebar .enclave-sb-count')"
        ".textContent.startsWith(rows.length + ' of ' + rows.length); }",
        arg=agent,
    )
    sidebar.locator("input.enclave-sb-agent").fill("")
    sidebar.locator("input.enclave-sb-agent").press("Enter")
    all_specimens(page, sidebar)

    # the launcher's card opens the form; the form is keyboard reachable
    page.locator(".jp-LauncherCard[data-category='Replay Enclave']").click()
    form = sidebar.locator(".enclave-sb-form")
    form.wait_for(state="visible")
    page.wait_for_function(
        "() => document.activeElement?.classList.contains('enclave-sb-specimen')"
    )
    choose_r2(page, form, stack.procurement)
    form.locator("input.enclave-sb-samples").fill("30")

    # an invisible purpose: refused in the browser, nothing sent; the service agrees
    posts_before = sum(u.endswith("/enclave/api/audits") for u in record.urls)
    form.locator("input.enclave-sb-purpose").fill("\u200b")
    form.locator("input.enclave-sb-purpose").press("Enter")
    refused = form.locator(".enclave-sb-error[data-side='browser']")
    refused.wait_for()
    assert refused.get_attribute("data-code") == "invalid_request"
    assert form.locator("input.enclave-sb-purpose").get_attribute("aria-invalid") == "true"
    assert sum(u.endswith("/enclave/api/audits") for u in record.urls) == posts_before
    body = {
        "specimen_id": stack.procurement,
        "strategy": "revision",
        "revision": "model=r2",
        "samples": 30,
        "seed": 1,
        "purpose": "\u200b",
    }
    assert post_audit(page, body) == (422, "invalid_request")
    assert post_audit(page, {**body, "purpose": "ok", "seed": "1"}) == (422, "invalid_request")

    form.locator("input.enclave-sb-purpose").fill(PURPOSE)
    page.screenshot(path=str(shots / "sidebar-request-form-light.png"), clip=_box(sidebar))
    form.locator("button.enclave-sb-submit").click()
    requested = form.locator(".enclave-sb-requested")
    requested.wait_for()
    audit_id = requested.get_attribute("data-audit-id")
    assert audit_id and audit_id.startswith("au-")
    # live: running in the status bar at once, then completed in the sidebar
    item = sidebar.locator(f"li.enclave-sb-audit[data-audit-id='{audit_id}']")
    assert item.count() == 1
    page.wait_for_selector(f"{STATUS}[data-running='1']")
    page.wait_for_selector(
        f"{SIDEBAR} li.enclave-sb-audit[data-audit-id='{audit_id}'][data-status='COMPLETED']",
        timeout=180_000,
    )
    page.wait_for_selector(f"{STATUS}[data-running='0']")
    polls = _status_polls(record)
    assert polls >= 1  # it was followed by polling
    done, total = item.locator(".enclave-sb-progress-text").inner_text().split("/")
    assert int(total) > 0 and done == total
    assert (
        item.locator(".enclave-sb-classification").get_attribute("data-classification")
        == "influential"
    )
    assert item.locator(".enclave-sb-cancel").count() == 0  # nothing left to cancel
    # the service's finding, from the stored certificate: the r2 revision and its flips
    stated = item.locator(".enclave-sb-finding").inner_text()
    assert stated.startswith("Switching call ") and " changed the decision in " in stated
    assert "paired runs" in stated and "Counterfactual-admissible" in stated
    page.screenshot(path=str(shots / "sidebar-light.png"), clip=_box(sidebar))

    shutil.copyfile(stack.issuer_key, alice_lab.root / "issuer.pub.pem")

    # the certificate: fetched through the server extension, opened in the viewer
    item.locator("button.enclave-sb-open-certificate").click()
    viewer = page.locator(VIEWER)
    viewer.locator(".enclave-certificate").wait_for()
    assert (
        viewer.locator(".enclave-classification").get_attribute("data-classification")
        == "influential"
    )
    # a v3 certificate: the interval chart, no per-sample bins
    assert viewer.locator("svg.enclave-delta-chart").count() == 1
    assert viewer.locator("svg.enclave-histogram").count() == 0
    viewer.locator("button.enclave-verify-button").focus()
    page.keyboard.press("Enter")
    report = viewer.locator(".enclave-verification")
    report.wait_for()
    assert report.get_attribute("data-ok") == "true"
    for side in ("browser", "server"):
        cells = viewer.locator(f".enclave-verify-cell[data-side='{side}']")
        assert cells.count() >= 3
        assert {cells.nth(i).get_attribute("data-ok") for i in range(cells.count())} == {"true"}
    saved = alice_lab.root / "certificates" / f"{audit_id}.dsse.json"
    assert saved.is_file()
    # beside it, the certificate bundle: the same envelope with its ledger proofs
    bundle = alice_lab.root / "certificates" / f"{audit_id}.bundle.json"
    bundled = json.loads(bundle.read_text(encoding="utf-8"))
    assert isinstance(bundled, dict)
    assert bundled["mediaType"] == "application/vnd.replay-enclave.certificate-bundle.v1+json"
    assert bundled["envelope"] == json.loads(saved.read_text(encoding="utf-8"))
    # nothing runs: the seconds spent opening and verifying saw no status poll
    assert _status_polls(record) == polls

    dark(page)
    page.screenshot(path=str(shots / "sidebar-dark.png"), clip=_box(sidebar))
    sidebar.locator("button.enclave-sb-new-request").click()  # closes the form
    sidebar.locator("button.enclave-sb-new-request").click()  # and opens it again
    form.wait_for(state="visible")  # with the r2 choices still made
    assert form.locator("input.enclave-sb-revision").input_value() == "model=r2"
    form.locator("input.enclave-sb-purpose").fill("a\x00b")
    form.locator("button.enclave-sb-submit").click()
    form.locator(".enclave-sb-error[data-side='browser'][data-code='invalid_request']").wait_for()
    page.screenshot(path=str(shots / "sidebar-request-form-dark.png"), clip=_box(sidebar))

    # cancel while it runs: the service decides (cancelled, or its refusal is shown)
    form.locator("input.enclave-sb-samples").fill("60")
    form.locator("input.enclave-sb-purpose").fill(PURPOSE)
    form.locator("button.enclave-sb-submit").click()
    second = form.locator(f".enclave-sb-requested:not([data-audit-id='{audit_id}'])")
    second.wait_for()
    cancelled_id = second.get_attribute("data-audit-id")
    row = f"{SIDEBAR} li.enclave-sb-audit[data-audit-id='{cancelled_id}']"
    page.locator(f"{row} button.enclave-sb-cancel").click()
    page.wait_for_selector(
        f"{row}[data-status='CANCELLED'], {row} .enclave-sb-audit-reason .enclave-sb-error"
    )
    answered = page.locator(row)
    if answered.get_attribute("data-status") != "CANCELLED":
        assert answered.locator(".enclave-sb-error").get_attribute("data-code")
    page.wait_for_selector(f"{STATUS}[data-running='0']", timeout=180_000)

    assert_no_canary(record, page, saved, bundle)


def _status_polls(record: Recorder) -> int:
    return sum("/enclave/api/audits/au-" in url for url in record.urls)


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 1400)}


def test_bob_sees_the_services_denial_in_the_sidebar(
    stack: EnclaveStack, switchable_lab: SwitchableLab, recorded_page: tuple[Any, Recorder]
) -> None:
    page, record = recorded_page
    switchable_lab.act_as(stack.tokens["bob"])  # the same JupyterLab, now bob's
    open_lab(page, switchable_lab)
    page.evaluate("() => window.jupyterapp.commands.execute('replay-enclave:new-audit-request')")
    sidebar = page.locator(SIDEBAR)
    who = sidebar.locator(".enclave-sb-whoami dd[data-field='name']")
    who.wait_for()
    assert who.inner_text() == "bob"
    assert sidebar.locator(".enclave-sb-whoami dd[data-field='roles']").inner_text() == "viewer"
    all_specimens(page, sidebar)
    form = sidebar.locator(".enclave-sb-form")
    form.wait_for(state="visible")
    # a viewer may list the specimen but not open it: the refusal is the service's
    form.locator("select.enclave-sb-specimen").select_option(stack.procurement)
    opened = form.locator(".enclave-sb-error[data-status='403']")
    opened.wait_for()
    assert opened.get_attribute("data-code") == "restricted_needs_clearance"
    policy = form.locator("select.enclave-sb-policy")
    policy.select_option(label="declared revision swap (e.g. model=r2)")
    form.locator("input.enclave-sb-revision").fill("model=r2")
    form.locator("input.enclave-sb-purpose").fill(PURPOSE)
    form.locator("button.enclave-sb-submit").click()
    denied = form.locator(".enclave-sb-error[data-side='service']")
    denied.wait_for()
    assert denied.get_attribute("data-status") == "403"
    assert denied.get_attribute("data-code") == "restricted_needs_clearance"
    assert "access denied by policy" in denied.inner_text()
    assert page.locator(STATUS).get_attribute("data-running") == "0"
    assert_no_canary(record, page)


def get_through_extension(page: Any, route: str) -> tuple[int, str]:
    """``GET /enclave/api/<route>`` from the page, as the sidebar would ask."""
    answer = page.evaluate(
        """async (route) => {
             const r = await fetch('/enclave/api/' + route);
             return [r.status, await r.text()];
           }""",
        route,
    )
    return int(answer[0]), str(answer[1])


@pytest.mark.parametrize("who", ["bob", "eve"])
def test_no_clearance_or_another_tenant_opens_no_certificate_through_the_extension(
    who: str,
    stack: EnclaveStack,
    switchable_lab: SwitchableLab,
    recorded_page: tuple[Any, Recorder],
) -> None:
    """alice's restricted certificate (the test above leaves one): bob (acme, no
    clearance) and eve (another tenant, cleared in her own) get a refusal for the
    certificate, its summary, its verification and its bundle, and no audit of acme in
    their list."""
    alice = {"Authorization": f"Bearer {stack.tokens['alice']}"}
    listed = httpx.get(f"{stack.url}/api/v1/audits", headers=alice, timeout=30).json()
    certified = [a["audit_id"] for a in listed["items"] if a["has_certificate"]]
    assert certified, "alice's test above leaves a certified audit in this module's stack"
    page, record = recorded_page
    switchable_lab.act_as(stack.tokens[who])
    open_lab(page, switchable_lab)
    for route in (
        "certificates/{}",
        "certificates/{}/summary",
        "certificates/{}/verify",
        "certificates/{}/bundle",
    ):
        status, text = get_through_extension(page, route.format(certified[0]))
        assert status in (403, 404), (route, status)
        assert '"payload"' not in text and "predicate" not in text
    status, text = get_through_extension(page, "audits")
    assert status == 200 and certified[0] not in text
    assert_no_canary(record, page)


def test_alice_requests_an_audit_from_a_cut_in_the_sidebar(
    stack: EnclaveStack, alice_lab: SwitchableLab, recorded_page: tuple[Any, Recorder]
) -> None:
    """The form lists the specimen's recorded cuts and its sealed auditability; a cut
    with the target before it is refused in the browser (the service agrees), one the
    browser cannot judge (a revision's swapped call) is refused by the service with its
    code, and the r2 audit from ``before-retrieval`` is certified with that cut."""
    page, record = recorded_page
    alice_lab.act_as(stack.tokens["alice"])  # the tests above switch to bob and eve
    open_lab(page, alice_lab)
    page.evaluate("() => window.jupyterapp.commands.execute('replay-enclave:new-audit-request')")
    sidebar = page.locator(SIDEBAR)
    all_specimens(page, sidebar)
    form = sidebar.locator(".enclave-sb-form")
    form.wait_for(state="visible")
    choose_r2(page, form, stack.procurement)
    cut = form.locator("select.enclave-sb-from-cut")
    page.wait_for_function("(el) => el.options.length === 3", arg=cut.element_handle())
    assert cut.evaluate("el => Array.from(el.options).map(o => o.value)") == [
        "",
        "before-retrieval",
        "before-authority",
    ]
    assert cut.input_value() == ""  # a full replay unless a cut is chosen
    assert form.locator(".enclave-sb-sealed").inner_text() == "Sealed: auditable"
    form.locator("input.enclave-sb-samples").fill("4")
    form.locator("input.enclave-sb-purpose").fill(PURPOSE)

    # the decider (the revision's swapped call) lies before this cut: the service says so
    cut.select_option("before-authority")
    form.locator("button.enclave-sb-submit").click()
    service = form.locator(".enclave-sb-error[data-side='service']")
    service.wait_for()
    assert (service.get_attribute("data-status"), service.get_attribute("data-code")) == (
        "400",
        "bad_input",
    )
    assert "lies before the cut" in service.inner_text()

    # a field intervention before the cut: refused in the browser, nothing sent
    supplier = "main/supplier_risk#0"
    form.locator("select.enclave-sb-call").select_option(supplier)
    policy = form.locator("select.enclave-sb-policy")
    policy.select_option(
        label=policy.locator(
            "option", has_text="procurement.supplier-confidence.replace"
        ).first.inner_text()
    )
    cut.select_option("before-authority")
    posts_before = sum(u.endswith("/enclave/api/audits") for u in record.urls)
    form.locator("button.enclave-sb-submit").click()
    browser = form.locator(".enclave-sb-error[data-side='browser']")
    browser.wait_for()
    assert browser.get_attribute("data-code") == "bad_input"
    assert "lies before the cut" in browser.inner_text()
    assert cut.get_attribute("aria-invalid") == "true"
    assert sum(u.endswith("/enclave/api/audits") for u in record.urls) == posts_before
    body = {
        "specimen_id": stack.procurement,
        "strategy": "replace",
        "call_id": supplier,
        "field": "/confidence",
        "value": 0.56,
        "samples": 4,
        "seed": 1,
        "purpose": PURPOSE,
        "from_cut": "before-authority",
    }
    assert post_audit(page, body) == (400, "bad_input")

    # the r2 audit from the first cut: accepted, and its certificate names the cut
    form.locator("select.enclave-sb-call").select_option("main/decider#0")
    policy.select_option(label=policy.locator("option", has_text=REVISION_POLICY).inner_text())
    revision = form.locator("input.enclave-sb-revision")
    page.wait_for_function("(el) => el.value === 'model=r2'", arg=revision.element_handle())
    cut.select_option("before-retrieval")
    form.locator("button.enclave-sb-submit").click()
    requested = form.locator(".enclave-sb-requested")
    requested.wait_for()
    audit_id = requested.get_attribute("data-audit-id")
    assert audit_id and audit_id.startswith("au-")
    page.wait_for_selector(
        f"{SIDEBAR} li.enclave-sb-audit[data-audit-id='{audit_id}'][data-status='COMPLETED']",
        timeout=180_000,
    )
    status, text = get_through_extension(page, f"certificates/{audit_id}/summary")
    assert status == 200
    predicate = json.loads(text)
    assert predicate["request"]["from_cut"] == "before-retrieval"
    assert predicate["cut"]["call_id"] == "main/before-retrieval#0"
    assert_no_canary(record, page)
