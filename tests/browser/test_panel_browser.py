"""The analyst front end in a real browser: JupyterLab, the investigation notebook, the
panel, a model-revision audit from request to verified certificate, a denial for an
analyst without rights, and a canary scan of everything the page received."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .conftest import Lab, Recorder, assert_no_canary, copy_notebook
from .stack import EnclaveStack

pytestmark = pytest.mark.slow

CURRENT = "window.jupyterapp.shell.currentWidget"
KERNEL_IDLE = f"() => {CURRENT}?.sessionContext?.session?.kernel?.status === 'idle'"
ALL_RUN = f"""() => {{
  const nb = {CURRENT}?.content;
  if (!nb || {CURRENT}.sessionContext.session?.kernel?.status !== 'idle') return false;
  return nb.widgets.every(c => c.model.type !== 'code' || c.model.executionCount !== null);
}}"""
ERRORS = f"""() => {CURRENT}.content.widgets.flatMap(c => c.model.type !== 'code' ? [] :
  Array.from({{length: c.model.outputs.length}}, (_, i) => c.model.outputs.get(i).toJSON())
  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue))"""


def open_notebook(page: Any, lab: Lab, path: str) -> None:
    page.goto(lab.page_url())
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.evaluate(
        "async (path) => { await window.jupyterapp.commands.execute("
        "'docmanager:open', {path, factory: 'Notebook'}); }",
        path,
    )
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden)")
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)


def run_all(page: Any, *, timeout_ms: int = 240_000) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_RUN, timeout=timeout_ms, polling=500)


def test_analyst_requests_and_verifies_a_model_revision_audit(
    stack: EnclaveStack, lab: Any, recorded_page: tuple[Any, Recorder], artifacts: Path
) -> None:
    page, record = recorded_page
    alice = lab("alice")
    notebook = copy_notebook(alice)
    open_notebook(page, alice, notebook.name)
    run_all(page)
    assert page.evaluate(ERRORS) == []

    # the notebook's own path: magic audit, service verification, offline verification
    out = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
    badge = out.locator(".enclave-certificate .enclave-classification").first
    assert badge.get_attribute("data-classification") == "influential"
    assert badge.get_attribute("data-auditability") == "counterfactual-admissible"
    verifications = out.locator(".enclave-verify-report")
    assert verifications.count() == 2
    for i in range(2):
        assert verifications.nth(i).get_attribute("data-ok") == "true"
    assert (
        out.locator(".enclave-verify-report .enclave-verify-check[data-name=ledger]").count() == 1
    )

    # the panel: request the same question interactively and follow it to the certificate
    panel = page.locator(".enclave-panel")
    panel.wait_for()
    assert "alice" in panel.locator(".enclave-whoami").inner_text()
    assert panel.locator(".enclave-specimens tr[data-specimen-id]").count() == 3
    panel.locator(".enclave-specimen-select select").select_option(stack.procurement)
    call = panel.locator(".enclave-call-select select")
    page.wait_for_function(
        "(el) => Array.from(el.options).some(o => o.textContent.startsWith('main/decider#0'))",
        arg=call.element_handle(),
    )
    call.select_option(label=call.locator("option", has_text="main/decider#0").inner_text())
    policy = panel.locator(".enclave-policy-select select")
    policy.select_option(
        label=policy.locator("option", has_text="procurement.decider-model.revision").inner_text()
    )
    revision = panel.locator(".enclave-revision input")
    page.wait_for_function("(el) => el.value === 'model=r2'", arg=revision.element_handle())
    panel.locator(".enclave-samples input").fill("30")
    panel.locator(".enclave-samples input").press("Enter")
    panel.locator(".enclave-purpose input").fill("Dispute review of PO-2291 on revision r2")
    panel.locator(".enclave-purpose input").press("Enter")
    panel.locator("button.enclave-submit").click()
    requested = panel.locator(".enclave-requested")
    requested.wait_for()
    audit_id = requested.get_attribute("data-audit-id")
    assert audit_id and audit_id.startswith("au-")

    view = panel.locator(
        f".enclave-certificate-view .enclave-certificate[data-audit-id='{audit_id}']"
    )
    view.wait_for(timeout=180_000)
    assert (
        panel.locator(f".enclave-audit[data-audit-id='{audit_id}']").get_attribute("data-status")
        == "COMPLETED"
    )
    assert (
        view.locator(".enclave-classification").get_attribute("data-classification")
        == "influential"
    )
    # a v3 certificate has no per-sample bins: the interval against the tolerance band
    assert view.locator("svg.enclave-delta-chart").count() == 1
    assert view.locator(".enclave-bar").count() == 0
    assert view.locator(".enclave-interval").count() == 1
    assert view.locator(".enclave-placebo").get_attribute("data-passed") == "true"
    assert view.locator(".enclave-lineage li").count() >= 3
    assert view.locator(".enclave-not-established li").count() >= 1

    panel.locator("button.enclave-verify").click()
    checks = panel.locator(".enclave-verification .enclave-verify-check")
    checks.nth(5).wait_for()
    assert checks.count() == 6
    assert [checks.nth(i).get_attribute("data-ok") for i in range(6)] == ["true"] * 6
    assert (
        panel.locator(".enclave-verification .enclave-verify-report").get_attribute("data-ok")
        == "true"
    )

    panel.locator("button.enclave-export").click()
    panel.locator(".enclave-export-path").wait_for()
    exported = alice.root / "certificates" / f"{audit_id}.dsse.json"
    assert json.loads(exported.read_text())["payloadType"] == "application/vnd.in-toto+json"

    panel.locator(".enclave-certificate-view").screenshot(path=str(artifacts / "certificate.png"))
    panel.locator(".enclave-verification").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "panel.png"))

    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(f"() => !{CURRENT}.context.model.dirty")
    saved = nbformat.read(notebook, as_version=4)
    assert any(c.get("outputs") for c in saved.cells if c.cell_type == "code")
    assert_no_canary(record, page, notebook, exported)


def test_analyst_without_rights_sees_a_clear_denial(
    stack: EnclaveStack, lab: Any, recorded_page: tuple[Any, Recorder]
) -> None:
    page, record = recorded_page
    bob = lab("bob")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_ext"),
        nbformat.v4.new_code_cell(
            f"%enclave audit {stack.procurement} --revision model=r2 --samples 10 "
            '--purpose "Dispute review of PO-2291"'
        ),
        nbformat.v4.new_code_cell("from jupyter_ext import EnclavePanel\nEnclavePanel()"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, bob.root / "denied.ipynb")
    open_notebook(page, bob, "denied.ipynb")
    run_all(page, timeout_ms=120_000)
    assert page.evaluate(ERRORS) == []

    out = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
    denial = out.locator(".enclave-error[data-status='403']").first
    assert denial.get_attribute("data-code") == "restricted_needs_clearance"
    assert "access denied by policy" in denial.inner_text()

    panel = page.locator(".enclave-panel")
    panel.wait_for()
    assert "bob" in panel.locator(".enclave-whoami").inner_text()
    panel.locator(".enclave-specimen-select select").select_option(stack.procurement)
    refused = panel.locator(".enclave-panel-error .enclave-error[data-status='403']")
    refused.wait_for()
    assert refused.get_attribute("data-code") == "restricted_needs_clearance"
    # through the server extension too: the same refusal, passed through as it is
    answer = page.evaluate(
        """async ([sp, token]) => {
             const r = await fetch('/enclave/api/audits', {method: 'POST',
               headers: {'Authorization': 'token ' + token, 'Content-Type': 'application/json'},
               body: JSON.stringify({specimen_id: sp, strategy: 'revision', revision: 'model=r2',
                                     samples: 10, seed: 1, purpose: 'dispute review'})});
             return [r.status, await r.json()];
           }""",
        [stack.procurement, bob.token],
    )
    assert answer[0] == 403 and answer[1]["error"]["code"] == "restricted_needs_clearance"
    assert_no_canary(record, page)
