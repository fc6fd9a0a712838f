"""Per-sample detail where a policy grants it: ``detail = "per-sample"`` in a policy file
(parsed, stored, shown), an audit asking for it under a policy that does not grant it
refused ``detail_not_granted``, and under one that does charged the larger bound of a
certificate that states every count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from enclave import BadInput, Runtime
from enclave.governance import (
    Analyst,
    InterventionPolicy,
    admit_audit,
    check_eligibility,
    get_policy,
)
from tests.unit.governance.test_inference_policy import active, draft, policy_text, refusal

ALICE = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="2026-01-01")


def test_a_policy_grants_per_sample_detail_through_file_store_and_view(runtime: Runtime) -> None:
    policy = active(runtime, policy_text(detail="per-sample"))
    stored = get_policy(runtime, policy.id, policy.version)
    assert stored.detail == "per-sample"
    assert stored.to_dict()["params"]["detail"] == "per-sample"
    assert stored.ledger_body()["detail"] == "per-sample"
    coarse = InterventionPolicy.from_toml(policy_text())
    assert coarse.detail == "coarse" and "detail" not in coarse.params_dict()


def test_a_detail_that_is_not_one_is_refused_in_one_line() -> None:
    with pytest.raises(BadInput) as caught:
        InterventionPolicy.from_toml(policy_text(detail="everything-CANARY"))
    assert str(caught.value) == "policy detail must be coarse or per-sample"


def test_per_sample_detail_is_refused_unless_the_policy_grants_it(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    active(runtime, policy_text())
    specimen = captured["procurement"]
    assert refusal(runtime, draft(specimen, detail="per-sample")) == "detail_not_granted"
    # the default asks for nothing more
    eligible = check_eligibility(runtime, draft(specimen), requester="alice", tenant="acme")
    assert eligible.request.detail == "coarse"


def test_a_granted_request_states_every_count_and_is_charged_for_it(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    active(runtime, policy_text(detail="per-sample"))
    specimen = captured["procurement"]
    coarse = check_eligibility(runtime, draft(specimen), requester="alice", tenant="acme")
    detailed = check_eligibility(
        runtime, draft(specimen, detail="per-sample"), requester="alice", tenant="acme"
    )
    assert (coarse.request.detail, detailed.request.detail) == ("coarse", "per-sample")
    assert detailed.request.to_dict()["detail"] == "per-sample"
    assert "detail" not in coarse.request.to_dict()
    # the charge is the bound of the certificate each will state: every row costs

    def charged(detail: str) -> float:
        admit_audit(
            runtime,
            draft(specimen, detail=detail),
            analyst=ALICE,
            now=datetime.now(UTC),
            submit=lambda request, request_id: None,
        )
        entry = runtime.ledger.entries(kind="audit.admitted", subject=specimen)[-1]
        return float(entry.body["disclosure_bits"])

    # four samples: a row each (d² + 1 values), the histogram, exact served-by counts
    assert charged("per-sample") > charged("coarse") + 20
