"""The Python API a user calls is ``enclave``'s front: the names it promises, each
documented, cheap to import, and enough on its own to capture, audit and verify."""

from __future__ import annotations

import inspect
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import enclave

PROMISED = {
    "AgentFailed",
    "AuditOutcome",
    "AuditRequest",
    "BadInput",
    "DecryptionFailed",
    "EnclaveError",
    "GrantRefused",
    "Home",
    "InfrastructureError",
    "IntegrityFailure",
    "Intervention",
    "Refused",
    "Runtime",
    "Strategy",
    "Tolerances",
    "capture",
    "erase_specimen",
    "export_certificates",
    "export_reports",
    "policies_root",
    "rewrap_tenant",
    "run_audit",
    "utc_now",
    "verify",
}


def test_the_front_promises_the_user_api() -> None:
    assert set(enclave.__all__) == PROMISED


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_every_name_resolves_and_is_documented(name: str) -> None:
    value = getattr(enclave, name)
    assert (inspect.getdoc(value) or "").strip(), f"enclave.{name} has no docstring"


def test_importing_the_front_loads_nothing_else() -> None:
    """The sandbox worker and every command import ``enclave``: the front defers all."""
    code = (
        "import sys, enclave; "
        "print(sorted(m for m in sys.modules if m.startswith(('enclave.', 'sqlalchemy'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_capture_audit_and_verify_through_the_front(tmp_path: Path) -> None:
    from enclave.incidents import procurement

    home = enclave.Home.init(tmp_path / "home")
    with enclave.Runtime.open(home, env={}) as runtime:
        sealed = enclave.capture(
            runtime,
            procurement.AGENT,
            procurement.BASELINE_INPUT["inputs"],
            tenant_id="acme",
            seed=procurement.BASELINE_INPUT["seed"],
        )
        request = enclave.AuditRequest(
            specimen_id=sealed.specimen_id,
            intervention=enclave.Intervention(
                strategy=enclave.Strategy.REVISION, revision=("model", "r2")
            ),
            purpose="does the model revision drive the decision?",
            requester="api-test",
            samples=20,
        )
        outcome = enclave.run_audit(runtime, request, now=datetime.now(UTC))
        assert outcome.envelope is not None
        report = enclave.verify(runtime, outcome.envelope)
        assert report.ok and [c.ok for c in report.checks] == [True] * len(report.checks)
        forged = dict(outcome.envelope, payload=outcome.envelope["payload"][:-4] + "AAAA")
        assert not enclave.verify(runtime, forged).ok
