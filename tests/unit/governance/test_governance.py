"""Governance: policy files and lifecycle, schema validation and preview, fail-closed
eligibility (each condition refused with its code), analysts, Cedar decisions, the
disclosure budget and its ledger record, and the CLI commands."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import typer
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from enclave import BadInput, Home, Refused, Runtime
from enclave.cli import capture_incidents, register_service_commands
from enclave.governance import (
    BITS_PER_AUDIT,
    AccessPolicy,
    Action,
    Analyst,
    AuditDraft,
    BudgetExhausted,
    InterventionPolicy,
    PolicyStatus,
    Resource,
    activate_policy,
    add_analyst,
    admit_audit,
    authenticate,
    budget_used,
    check_eligibility,
    disable_analyst,
    find_tool,
    get_policy,
    list_policies,
    load_policy,
    load_policy_file,
    parameter_problems,
    policies_root,
    retire_policy,
    validate_policy,
)
from enclave.replay.disclosure import VocabularySize, disclosure_bound
from ledger import Classification, Retention, canonical_digest
from ledger.tables import GOVERNANCE_TABLES, METADATA
from tests.support.canary import INCIDENT_CANARIES, find_canaries

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
POLICY_DIR = policies_root() / "interventions"
SUPPLIER_CALL = "main/supplier_risk#0"
FRAUD_CALL = "main/fraud_score#0"


def policy_text(**changes: Any) -> bytes:
    doc: dict[str, Any] = {
        "id": "test.confidence.replace",
        "version": 1,
        "tenant": "acme",
        "provider": "risk-office",
        "tool": "supplier_risk",
        "schema_id": "supplier-risk",
        "schema_version": "2",
        "field": "/confidence",
        "strategy": "replace",
        "params": {"alternates": [0.5, 0.56]},
        "budget": {"audits": 5, "window_seconds": 86400},
    }
    doc.update(changes)
    doc = {k: v for k, v in doc.items() if v is not None}
    lines = []
    for key, value in doc.items():
        if not isinstance(value, dict):
            lines.append(f"{key} = {json.dumps(value)}")
    for key, value in doc.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in value.items()]
    return ("\n".join(lines) + "\n").encode()


def active(runtime: Runtime, data: bytes) -> InterventionPolicy:
    policy = load_policy(runtime, InterventionPolicy.from_toml(data), now=T0)
    assert validate_policy(runtime, policy.id, policy.version, now=T0).ok
    return activate_policy(runtime, policy.id, policy.version, now=T0)


def activate_shipped(runtime: Runtime) -> list[InterventionPolicy]:
    out = []
    for path in sorted(POLICY_DIR.glob("*.toml")):
        policy = load_policy_file(runtime, path, now=T0)
        report = validate_policy(runtime, policy.id, now=T0)
        assert report.ok, (path.name, report.problems)
        out.append(activate_policy(runtime, policy.id, now=T0))
    return out


def draft(specimen: str, **changes: Any) -> AuditDraft:
    base: dict[str, Any] = {
        "specimen_id": specimen,
        "strategy": "replace",
        "purpose": "purchase-order-review",
        "samples": 4,
        "seed": 1,
        "call_id": SUPPLIER_CALL,
        "field": "/confidence",
        "value": 0.56,
        "value_given": True,
    }
    base.update(changes)
    return AuditDraft(**base)


def refusal(runtime: Runtime, d: AuditDraft, tenant: str = "acme") -> str:
    with pytest.raises(Refused) as caught:
        check_eligibility(runtime, d, requester="alice", tenant=tenant)
    assert not find_canaries(str(caught.value).encode(), INCIDENT_CANARIES)
    return caught.value.code


def reseal(runtime: Runtime, specimen_id: str, *, new_id: str, **changes: Any) -> str:
    """Seal a copy of a specimen's metadata with some facts changed (no payloads)."""
    record = runtime.ledger.get_specimen(specimen_id)
    manifest = json.loads(json.dumps(record.manifest))
    manifest["specimen_id"] = new_id
    for key in ("score_bounds",):
        if key in changes:
            manifest[key] = changes.pop(key)
    copy = dataclasses.replace(
        record,
        specimen_id=new_id,
        manifest=manifest,
        manifest_digest=canonical_digest(manifest),
        **changes,
    )
    runtime.ledger.seal_specimen(copy)
    return new_id


# -- public names and schema --------------------------------------------------------------


def _only(names: tuple[str, ...]) -> sa.MetaData:
    metadata = sa.MetaData()
    for name in names:
        METADATA.tables[name].to_metadata(metadata)
    return metadata


def test_migrated_schema_matches_the_table_definitions(runtime: Runtime) -> None:
    def include(name: str | None, type_: str, _parents: Any) -> bool:
        return type_ != "table" or name in GOVERNANCE_TABLES

    with runtime.ledger.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": include, "compare_type": True}
        )
        assert compare_metadata(context, _only(GOVERNANCE_TABLES)) == []


# -- policy files -------------------------------------------------------------------------


def test_every_shipped_policy_file_parses_and_names_a_declared_tool() -> None:
    files = sorted(POLICY_DIR.glob("*.toml"))
    assert len(files) == 6
    seen = set()
    for path in files:
        policy = InterventionPolicy.from_toml(path.read_bytes())
        assert policy.source_digest == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        assert parameter_problems(policy, find_tool(policy)) == [], path.name
        seen.add((policy.tool, policy.field, policy.strategy.value))
    assert seen == {
        ("supplier_risk", "/confidence", "replace"),
        ("supplier_risk", "/confidence", "perturb"),
        ("decider", "#identity", "revision"),
        ("fraud_score", "/fraud_score", "nullify"),
        ("fraud_score", "/fraud_score", "perturb"),
        ("planner-model", "/preferred_shard", "replace"),
    }
    replace = InterventionPolicy.from_toml(
        (POLICY_DIR / "procurement-supplier-confidence-replace.toml").read_bytes()
    )
    assert 0.56 in replace.params.alternates
    claims = InterventionPolicy.from_toml(
        (POLICY_DIR / "claims-fraud-score-perturb.toml").read_bytes()
    )
    assert claims.params.delta == (-0.3, 0.3)


@pytest.mark.parametrize(
    "changes",
    [
        {"colour": "blue"},
        {"budget": None},
        {"params": {}},
        {"strategy": "nullify"},  # nullify takes no parameters
        {"strategy": "perturb", "params": {"delta": [0.3, -0.3]}},
        {"strategy": "perturb", "params": {"delta": [0.1]}},
        {"strategy": "explode"},
        {"field": "/a/~2"},  # not a JSON Pointer (a nested one like /a/b is allowed)
        {"strategy": "revision", "params": {"revision_point": "model", "alternates": ["r2"]}},
        {"params": {"alternates": [0.5, 0.5]}},
        {"budget": {"audits": 0, "window_seconds": 3600}},
        {"budget": {"audits": 3}},
        {"id": "Bad Id!"},
        {"tenant": "../etc"},
        {"authoritative_substitutes": "approval-policy"},  # a list of names
        {"authoritative_substitutes": ["main/approval-policy#0"]},  # a call id, no name
        {"authoritative_substitutes": ["approval-policy", "approval-policy"]},
        {"authoritative_substitutes": [0.56]},
    ],
)
def test_invalid_policy_files_are_refused_without_quoting_values(changes: dict[str, Any]) -> None:
    with pytest.raises(BadInput) as caught:
        InterventionPolicy.from_toml(policy_text(**changes))
    message = str(caught.value)
    for value in ("0.56", "blue", "explode", "Bad Id", "../etc"):
        assert value not in message


def test_undecodable_toml_is_refused_opaquely() -> None:
    with pytest.raises(BadInput) as caught:
        InterventionPolicy.from_toml(b'id = "x"\nconfidence = CANARY-PROC-2f9c1e\n')
    assert "CANARY" not in str(caught.value)


# -- lifecycle ----------------------------------------------------------------------------


def test_lifecycle_draft_validated_active_retired(runtime: Runtime) -> None:
    p1 = load_policy(runtime, InterventionPolicy.from_toml(policy_text()), now=T0)
    assert p1.status is PolicyStatus.DRAFT
    with pytest.raises(Refused) as caught:
        activate_policy(runtime, p1.id, 1, now=T0)
    assert caught.value.code == "invalid_transition"
    report = validate_policy(runtime, p1.id, 1, now=T0)
    assert report.ok and report.policy.status is PolicyStatus.VALIDATED
    assert activate_policy(runtime, p1.id, 1, now=T0).status is PolicyStatus.ACTIVE
    # a second version, once active, retires the first
    p2 = load_policy(runtime, InterventionPolicy.from_toml(policy_text(version=2)), now=T0)
    validate_policy(runtime, p2.id, 2, now=T0)
    activate_policy(runtime, p2.id, 2, now=T0)
    assert get_policy(runtime, p1.id, 1).status is PolicyStatus.RETIRED
    assert get_policy(runtime, p1.id).version == 2
    assert [p.version for p in list_policies(runtime, status=PolicyStatus.ACTIVE)] == [2]
    retired = retire_policy(runtime, p2.id, 2, now=T0 + timedelta(hours=1))
    assert retired.status is PolicyStatus.RETIRED and retired.retired_at is not None
    for step in (activate_policy, retire_policy):
        with pytest.raises(Refused):
            step(runtime, p2.id, 2, now=T0)
    with pytest.raises(Refused):
        validate_policy(runtime, p2.id, 2, now=T0)
    kinds = [(e.kind, e.subject) for e in runtime.ledger.entries() if e.kind.startswith("policy.")]
    assert kinds == [
        ("policy.draft", f"{p1.id}@1"),
        ("policy.validated", f"{p1.id}@1"),
        ("policy.active", f"{p1.id}@1"),
        ("policy.draft", f"{p1.id}@2"),
        ("policy.validated", f"{p1.id}@2"),
        ("policy.active", f"{p1.id}@2"),
        ("policy.retired", f"{p1.id}@1"),
        ("policy.retired", f"{p1.id}@2"),
    ]


def test_reloading_needs_identical_bytes(runtime: Runtime) -> None:
    first = load_policy(runtime, InterventionPolicy.from_toml(policy_text()), now=T0)
    again = load_policy(
        runtime, InterventionPolicy.from_toml(policy_text()), now=T0 + timedelta(days=1)
    )
    assert again.source_digest == first.source_digest and again.created_at == first.created_at
    with pytest.raises(BadInput):
        load_policy(
            runtime, InterventionPolicy.from_toml(policy_text(params={"alternates": [0.6]})), now=T0
        )


# -- validation against the tool's schema -------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"params": {"alternates": [0.5, 1.5]}}, "out_of_bounds:alternates[1]"),
        ({"params": {"alternates": ["high"]}}, "out_of_bounds:alternates[0]"),
        ({"schema_version": "3"}, "unknown_schema"),
        ({"tool": "no-such-tool"}, "unknown_schema"),
        ({"field": "/rating"}, "unknown_field"),
        (
            {"field": "/supplier", "strategy": "perturb", "params": {"delta": [-0.1, 0.1]}},
            "strategy_not_applicable",
        ),
        ({"strategy": "perturb", "params": {"delta": [-2.0, 0.1]}}, "out_of_bounds:delta"),
        (
            {
                "tool": "decider",
                "schema_id": "decider-chat",
                "schema_version": "1",
                "field": "#identity",
                "strategy": "revision",
                "params": {"revision_point": "model", "alternates": ["r9"]},
            },
            "unknown_revision:alternates[0]",
        ),
        (
            {
                "tool": "decider",
                "schema_id": "decider-chat",
                "schema_version": "1",
                "field": "#identity",
                "strategy": "revision",
                "params": {"revision_point": "template", "alternates": ["c2"]},
            },
            "unknown_revision",
        ),
    ],
)
def test_validation_checks_parameters_against_the_declared_schema(
    runtime: Runtime, changes: dict[str, Any], problem: str
) -> None:
    policy = load_policy(runtime, InterventionPolicy.from_toml(policy_text(**changes)), now=T0)
    report = validate_policy(runtime, policy.id, now=T0)
    assert not report.ok and problem in report.problems
    assert get_policy(runtime, policy.id).status is PolicyStatus.DRAFT  # stays a draft


def test_preview_reports_digests_and_schema_validity_only(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    path = POLICY_DIR / "claims-fraud-score-perturb.toml"
    policy = load_policy_file(runtime, path, now=T0)
    report = validate_policy(runtime, policy.id, now=T0, specimen_id=captured["claims"])
    assert report.ok and report.preview is not None
    by_label = {p.label: p for p in report.preview.parameters}
    # recorded fraud score 0.82: -0.3 stays in [0, 1], +0.3 does not
    assert by_label["delta.min"].ok and by_label["delta.min"].schema_valid
    assert by_label["delta.min"].unchanged_digest_equal is True
    assert by_label["delta.min"].counterfactual_digest.startswith("hmac-sha256:")
    assert by_label["delta.min"].original_digest != by_label["delta.min"].counterfactual_digest
    assert not by_label["delta.max"].ok and by_label["delta.max"].code == "out_of_bounds"
    assert not by_label["delta.max"].schema_valid
    text = json.dumps(report.to_dict())
    assert (
        "0.82" not in text
        and "0.52" not in text
        and not find_canaries(text.encode(), INCIDENT_CANARIES)
    )
    assert runtime.ledger.entries(kind="policy.previewed")


def test_preview_on_a_specimen_without_the_tool_fails_validation(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    policy = load_policy(runtime, InterventionPolicy.from_toml(policy_text()), now=T0)
    report = validate_policy(runtime, policy.id, now=T0, specimen_id=captured["claims"])
    assert not report.ok and report.preview is not None and report.preview.code == "unknown_call"
    assert get_policy(runtime, policy.id).status is PolicyStatus.DRAFT


# -- eligibility --------------------------------------------------------------------------


def test_an_eligible_request_is_bound_to_its_one_policy(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    activate_shipped(runtime)
    eligible = check_eligibility(
        runtime, draft(captured["procurement"]), requester="alice", tenant="acme"
    )
    assert eligible.policy.id == "procurement.supplier-confidence.replace"
    assert eligible.request.policy == ("procurement.supplier-confidence.replace", 1)
    assert eligible.request.requester == "alice" and eligible.field == "/confidence"
    revision = check_eligibility(
        runtime,
        draft(
            captured["procurement"],
            strategy="revision",
            revision="model=r2",
            call_id=None,
            field=None,
            value=None,
            value_given=False,
        ),
        requester="alice",
        tenant="acme",
    )
    assert revision.policy.id == "procurement.decider-model.revision"
    assert revision.target_call_id == "main/decider#0" and revision.field == "#identity"
    nullify = check_eligibility(
        runtime,
        draft(
            captured["claims"],
            strategy="nullify",
            call_id=FRAUD_CALL,
            field="/fraud_score",
            value=None,
            value_given=False,
        ),
        requester="alice",
        tenant="acme",
    )
    assert nullify.policy.id == "claims.fraud-score.nullify"
    # the substitutes each shipped policy takes as the service travel with the request
    assert eligible.request.authoritative_substitutes == ("approval-policy",)
    assert nullify.request.authoritative_substitutes == ("review-policy",)


def test_a_policy_may_declare_authoritative_only_the_agents_own_substitutes(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    stored = active(runtime, policy_text(authoritative_substitutes=["approval-policy"]))
    assert stored.authoritative_substitutes == ("approval-policy",)
    assert get_policy(runtime, stored.id).authoritative_substitutes == ("approval-policy",)
    assert stored.to_dict()["params"]["authoritative_substitutes"] == ["approval-policy"]
    eligible = check_eligibility(
        runtime, draft(captured["procurement"]), requester="alice", tenant="acme"
    )
    assert eligible.request.authoritative_substitutes == ("approval-policy",)
    # supplier_risk is a declared boundary without a substitute; "oracle" is no boundary
    for version, name in enumerate(("supplier_risk", "oracle"), start=2):
        active(runtime, policy_text(version=version, authoritative_substitutes=[name]))
        assert refusal(runtime, draft(captured["procurement"])) == "substitute_not_declared"


def test_each_unmet_condition_refuses_with_its_code(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    activate_shipped(runtime)
    proc = captured["procurement"]
    record = runtime.ledger.get_specimen(proc)
    cases: list[tuple[str, AuditDraft, str]] = []
    cases.append(("unknown_specimen", draft("sp-does-not-exist"), "acme"))
    cases.append(("wrong_tenant", draft(proc), "globex"))
    # a specimen row whose run is not sealed (only by tampering: defence in depth)
    torn = reseal(runtime, proc, new_id="sp-torn")
    with runtime.ledger.engine.begin() as conn:
        conn.execute(sa.text("UPDATE runs SET status = 'incomplete' WHERE id = 'sp-torn'"))
    cases.append(("not_sealed", draft(torn), "acme"))
    erased = reseal(runtime, proc, new_id="sp-erased")
    runtime.ledger.mark_erased(erased, erased_at="2026-03-01T09:00:00Z")
    cases.append(("erased", draft(erased), "acme"))
    unbounded = reseal(runtime, proc, new_id="sp-unbounded", score_bounds=None)
    cases.append(("unbounded_outcome", draft(unbounded), "acme"))
    cases.append(("unknown_call", draft(proc, call_id="main/supplier_risk#7"), "acme"))
    unstable = reseal(
        runtime,
        proc,
        new_id="sp-unstable",
        steps=tuple(
            s._replace(call_id="risk-call") if s.call_id == SUPPLIER_CALL else s
            for s in record.steps
        ),
    )
    cases.append(("unstable_call", draft(unstable, call_id="risk-call"), "acme"))
    cases.append(("unknown_field", draft(proc, field="/rating"), "acme"))
    cases.append(("target_unresolvable", draft(proc, field="/scoring_memo"), "acme"))  # withheld
    risk_seq = next(s.seq for s in record.steps if s.call_id == SUPPLIER_CALL)
    digest_only = reseal(
        runtime,
        proc,
        new_id="sp-digest-only",
        fields=tuple(
            f._replace(retention=Retention.DIGEST_ONLY, payload_ref=None)
            if (f.seq, f.path) == (risk_seq, "/confidence")
            else f
            for f in record.fields
        ),
    )
    cases.append(("target_unresolvable", draft(digest_only), "acme"))
    unschemed = reseal(
        runtime,
        proc,
        new_id="sp-schema-v9",
        steps=tuple(
            s._replace(schema_version="9") if s.call_id == SUPPLIER_CALL else s
            for s in record.steps
        ),
    )
    cases.append(("unknown_schema", draft(unschemed), "acme"))
    narrow = reseal(
        runtime,
        proc,
        new_id="sp-narrow",
        adapter=dataclasses.replace(record.adapter, strategies=("nullify",)),
    )
    cases.append(("strategy_not_declared", draft(narrow), "acme"))
    cases.append(
        (
            "strategy_not_declared",
            draft(
                proc,
                strategy="revision",
                revision="model=r7",
                call_id=None,
                field=None,
                value=None,
                value_given=False,
            ),
            "acme",
        )
    )
    cases.append(("no_active_policy", draft(proc, field="/analyst_note", value="x"), "acme"))
    cases.append(("policy_mismatch", draft(proc, policy_id="claims.fraud-score.nullify"), "acme"))
    cases.append(("parameter_not_authorised", draft(proc, value=0.57), "acme"))
    cases.append(
        (
            "parameter_not_authorised",
            draft(proc, strategy="perturb", value=None, value_given=False, delta=0.25),
            "acme",
        )
    )
    for expected, request, tenant in cases:
        assert refusal(runtime, request, tenant) == expected, expected


def test_two_active_matching_policies_refuse_as_ambiguous(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    activate_shipped(runtime)
    active(runtime, policy_text(id="second.confidence.replace", params={"alternates": [0.56]}))
    assert refusal(runtime, draft(captured["procurement"])) == "ambiguous_policy"
    # naming one does not resolve the ambiguity
    named = draft(captured["procurement"], policy_id="second.confidence.replace")
    assert refusal(runtime, named) == "ambiguous_policy"
    retire_policy(runtime, "second.confidence.replace", now=T0)
    assert check_eligibility(runtime, draft(captured["procurement"]), requester="a", tenant="acme")


@pytest.mark.parametrize(
    "changes",
    [
        {"value": None, "value_given": False},  # replace without a value
        {"delta": 0.1},  # replace with a delta
        {"strategy": "perturb", "delta": None, "value": None, "value_given": False},
        {"strategy": "teleport"},
        {"samples": 1},
        {"purpose": "  "},
        {"tolerances": {"score": 2}},
        {"tolerances": {"decision": "ignore"}},
        {"strategy": "revision", "revision": "model", "value_given": False},
        {"value": float("nan")},
    ],
)
def test_malformed_requests_are_bad_input(
    runtime: Runtime, captured: dict[str, str], changes: dict[str, Any]
) -> None:
    activate_shipped(runtime)
    with pytest.raises(BadInput):
        check_eligibility(
            runtime, draft(captured["procurement"], **changes), requester="a", tenant="acme"
        )


# -- disclosure budget and the ledger record ----------------------------------------------


def test_budget_refuses_past_the_window_count_and_recovers(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    from enclave.jobs import submit_audit

    active(runtime, policy_text(budget={"audits": 2, "window_seconds": 3600}))
    alice = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="x")
    bob = Analyst(name="bob", tenant="acme", roles=("auditor",), created_at="x")

    def submit(now: datetime) -> Any:
        return lambda request, key: submit_audit(
            runtime, request, tenant_id="acme", now=now, idempotency_key=key
        )

    d = draft(captured["procurement"])
    for minute in (0, 10):
        now = T0 + timedelta(minutes=minute)
        admitted = admit_audit(runtime, d, analyst=alice, now=now, submit=submit(now))
        assert admitted.status.status == "QUEUED"
    late = T0 + timedelta(minutes=20)
    with pytest.raises(BudgetExhausted) as caught:
        admit_audit(runtime, d, analyst=alice, now=late, submit=submit(late))
    assert caught.value.code == "disclosure_budget_exhausted"
    assert caught.value.retry_after == 40 * 60 + 1
    # the budget is per analyst
    admit_audit(runtime, d, analyst=bob, now=late, submit=submit(late))
    # once the first request leaves the window, one more is allowed
    later = T0 + timedelta(minutes=61)
    admit_audit(runtime, d, analyst=alice, now=later, submit=submit(later))
    used = budget_used(
        runtime,
        analyst="alice",
        specimen_id=d.specimen_id,
        field="/confidence",
        since=later - timedelta(hours=1),
    )
    assert len(used) == 2
    entries = runtime.ledger.entries(kind="audit.admitted", subject=d.specimen_id)
    assert len(entries) == 4
    body = entries[0].body
    assert body["analyst"] == "alice" and body["purpose"] == "purchase-order-review"
    assert body["policy"] == {"id": "test.confidence.replace", "version": 1}
    assert body["parameters"]["digest"].startswith("hmac-sha256:")
    assert "0.56" not in json.dumps(body)  # the parameter appears as a keyed digest only
    assert len(runtime.ledger.entries(kind="audit.requested")) == 4  # recorded by the queue


def test_budget_is_not_oversubscribed_by_concurrent_requests(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    from enclave.jobs import submit_audit

    active(runtime, policy_text(budget={"audits": 3, "window_seconds": 3600}))
    alice = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="x")
    outcomes: list[str] = []

    def one() -> None:
        try:
            admit_audit(
                runtime,
                draft(captured["procurement"]),
                analyst=alice,
                now=T0,
                submit=lambda r, k: submit_audit(
                    runtime, r, tenant_id="acme", now=T0, idempotency_key=k
                ),
            )
            outcomes.append("ok")
        except BudgetExhausted:
            outcomes.append("429")

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["429"] * 3 + ["ok"] * 3


def _charge(runtime: Runtime, d: AuditDraft) -> float:
    eligible = check_eligibility(runtime, d, requester="alice", tenant="acme")
    return disclosure_bound(
        samples=d.samples,
        tolerance=eligible.request.tolerances.score,
        vocabulary=VocabularySize.of_manifest(eligible.record.manifest),
    ).bits


def test_budget_is_charged_in_bits_of_the_disclosure_bound(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    from enclave.jobs import submit_audit

    small = draft(captured["procurement"], samples=4)
    large = draft(captured["procurement"], samples=1000)
    active(runtime, policy_text(budget={"bits": 1.0, "window_seconds": 3600}))
    small_bits, large_bits = _charge(runtime, small), _charge(runtime, large)
    assert 0 < small_bits < large_bits < BITS_PER_AUDIT
    # room for two large audits and no third: a budget in bits, not in audits
    policy = active(
        runtime,
        policy_text(version=2, budget={"bits": 2 * large_bits + 1, "window_seconds": 3600}),
    )
    assert policy.budget.audits is None and policy.budget.bits == 2 * large_bits + 1
    alice = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="x")

    def admit(d: AuditDraft, minute: int) -> Any:
        now = T0 + timedelta(minutes=minute)
        return admit_audit(
            runtime,
            d,
            analyst=alice,
            now=now,
            submit=lambda r, k: submit_audit(
                runtime, r, tenant_id="acme", now=now, idempotency_key=k
            ),
        )

    admit(large, 0)
    admit(large, 10)
    with pytest.raises(BudgetExhausted) as caught:
        admit(large, 20)
    assert caught.value.retry_after == 40 * 60 + 1  # when the first charge leaves the window
    # what is left (1 bit) is less than even the smallest audit's bound
    with pytest.raises(BudgetExhausted):
        admit(small, 20)
    bodies = [
        e.body for e in runtime.ledger.entries(kind="audit.admitted", subject=small.specimen_id)
    ]
    assert [b["disclosure_bits"] for b in bodies] == [large_bits, large_bits]


def test_a_budget_in_audits_is_worth_bits_per_audit_and_still_caps_the_count() -> None:
    legacy = InterventionPolicy.from_toml(policy_text())
    assert legacy.budget.audits == 5 and legacy.budget.bits == 5 * BITS_PER_AUDIT
    assert legacy.budget.to_dict() == {
        "window_seconds": 86400,
        "bits": 5 * BITS_PER_AUDIT,
        "audits": 5,
    }
    both = InterventionPolicy.from_toml(
        policy_text(budget={"audits": 3, "bits": 100.5, "window_seconds": 600})
    )
    assert (both.budget.audits, both.budget.bits) == (3, 100.5)
    for bad in ({"bits": 0, "window_seconds": 600}, {"bits": "many", "window_seconds": 600}):
        with pytest.raises(BadInput):
            InterventionPolicy.from_toml(policy_text(budget=bad))


# -- analysts -----------------------------------------------------------------------------


def test_analyst_tokens_are_shown_once_and_stored_as_hashes(runtime: Runtime) -> None:
    analyst, token = add_analyst(
        runtime, "alice", tenant="acme", roles=["auditor", "viewer"], now=T0
    )
    assert analyst.roles == ("auditor", "viewer")
    assert authenticate(runtime, token) == analyst
    with runtime.ledger.engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(sa.text("SELECT * FROM analysts"))]
    assert token not in repr(rows)
    assert ("sha256:" + hashlib.sha256(token.encode()).hexdigest()) in repr(rows)
    assert token not in (runtime.home.root / "ledger.db").read_bytes().decode("latin-1")
    assert authenticate(runtime, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert authenticate(runtime, "") is None and authenticate(runtime, "rea_" + "x" * 43) is None
    with pytest.raises(BadInput):
        add_analyst(runtime, "alice", tenant="acme", roles=["viewer"], now=T0)
    with pytest.raises(BadInput):
        add_analyst(runtime, "root", tenant="acme", roles=["superuser"], now=T0)
    disable_analyst(runtime, "alice", now=T0)
    assert authenticate(runtime, token) is None


# -- Cedar --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def access() -> AccessPolicy:
    return AccessPolicy.load()


def person(*roles: str, tenant: str = "acme") -> Analyst:
    return Analyst(name="p", tenant=tenant, roles=roles, created_at="x")


def specimen(
    *, tenant: str = "acme", classification: str = "restricted", hold: bool = False
) -> Resource:
    return Resource(
        kind="Specimen", id="sp-1", tenant=tenant, classification=classification, legal_hold=hold
    )


@pytest.mark.parametrize(
    ("who", "action", "resource", "purpose", "expected"),
    [
        (
            person("auditor", "restricted-clearance"),
            Action.REQUEST_AUDIT,
            specimen(),
            "review",
            "allowed",
        ),
        (
            person("auditor", "restricted-clearance", tenant="globex"),
            Action.REQUEST_AUDIT,
            specimen(),
            "review",
            "tenant_isolation",
        ),
        (
            person("auditor", "restricted-clearance", tenant="globex"),
            Action.READ_SPECIMEN,
            specimen(),
            "",
            "tenant_isolation",
        ),
        (
            person("viewer", tenant="globex"),
            Action.LIST_SPECIMENS,
            Resource.tenant_of("acme"),
            "",
            "tenant_isolation",
        ),
        (
            person("auditor", "restricted-clearance"),
            Action.REQUEST_AUDIT,
            specimen(hold=True),
            "review",
            "legal_hold",
        ),
        (
            person("auditor", "restricted-clearance", "legal-hold-reviewer"),
            Action.REQUEST_AUDIT,
            specimen(hold=True),
            "review",
            "allowed",
        ),
        (
            person("viewer", "restricted-clearance"),
            Action.REQUEST_AUDIT,
            specimen(),
            "review",
            "not_permitted",
        ),
        (
            person("viewer", "restricted-clearance"),
            Action.CANCEL_AUDIT,
            Resource(kind="Audit", id="au-1", tenant="acme", classification="internal"),
            "",
            "not_permitted",
        ),
        (person("viewer"), Action.READ_SPECIMEN, specimen(), "", "restricted_needs_clearance"),
        (
            person("auditor"),
            Action.REQUEST_AUDIT,
            specimen(),
            "review",
            "restricted_needs_clearance",
        ),
        (
            person("auditor"),
            Action.REQUEST_AUDIT,
            specimen(classification="confidential"),
            "review",
            "allowed",
        ),
        (
            person("auditor", "restricted-clearance"),
            Action.REQUEST_AUDIT,
            specimen(),
            "",
            "purpose_required",
        ),
        # the ledger's head and chain span tenants: operators only
        (person("viewer"), Action.READ_LEDGER, Resource.ledger(), "", "not_permitted"),
        (person("auditor"), Action.READ_LEDGER, Resource.ledger(), "", "not_permitted"),
        (person("tenant-admin"), Action.READ_LEDGER, Resource.ledger(), "", "not_permitted"),
        (person("operator"), Action.READ_LEDGER, Resource.ledger(), "", "allowed"),
        # what derives from a restricted specimen carries its wall
        (
            person("viewer"),
            Action.READ_CERTIFICATE,
            Resource(kind="Audit", id="au-1", tenant="acme", classification="restricted"),
            "",
            "restricted_needs_clearance",
        ),
        (
            person("viewer"),
            Action.READ_AUDIT,
            Resource(kind="Audit", id="au-1", tenant="acme", classification="restricted"),
            "",
            "restricted_needs_clearance",
        ),
        (
            person("viewer", "restricted-clearance"),
            Action.READ_CERTIFICATE,
            Resource(kind="Audit", id="au-1", tenant="acme", classification="restricted"),
            "",
            "allowed",
        ),
        # an audit is cancelled by its requester or an admin of its tenant
        (
            person("auditor"),
            Action.CANCEL_AUDIT,
            Resource(
                kind="Audit", id="au-1", tenant="acme", classification="internal", requester="q"
            ),
            "",
            "not_permitted",
        ),
        (
            person("auditor"),
            Action.CANCEL_AUDIT,
            Resource(
                kind="Audit", id="au-1", tenant="acme", classification="internal", requester="p"
            ),
            "",
            "allowed",
        ),
        (
            person("tenant-admin"),
            Action.CANCEL_AUDIT,
            Resource(
                kind="Audit", id="au-1", tenant="acme", classification="restricted", requester="q"
            ),
            "",
            "allowed",
        ),
        (
            person("tenant-admin", tenant="globex"),
            Action.CANCEL_AUDIT,
            Resource(
                kind="Audit", id="au-1", tenant="acme", classification="internal", requester="q"
            ),
            "",
            "tenant_isolation",
        ),
        (
            person("restricted-clearance"),
            Action.LIST_SPECIMENS,
            Resource.tenant_of("acme"),
            "",
            "not_permitted",
        ),
    ],
)
def test_cedar_decisions(
    access: AccessPolicy,
    who: Analyst,
    action: Action,
    resource: Resource,
    purpose: str,
    expected: str,
) -> None:
    decision = access.authorize(who, action, resource, purpose=purpose, now=T0)
    assert decision.code == expected
    assert decision.allowed is (expected == "allowed")


def test_access_policies_that_do_not_validate_are_refused(tmp_path: Path) -> None:
    source = policies_root() / "access"
    (tmp_path / "schema.cedarschema").write_text((source / "schema.cedarschema").read_text())
    (tmp_path / "bad.cedar").write_text(
        'permit (principal, action == Action::"read_specimen", resource)\n'
        'when { resource.colour == "red" };\n'
    )
    with pytest.raises(BadInput):
        AccessPolicy.load(tmp_path)
    (tmp_path / "bad.cedar").write_text("permit (principal, action, resource")
    with pytest.raises(BadInput):
        AccessPolicy.load(tmp_path)


def test_classification_values_match_the_ledger() -> None:
    text = (policies_root() / "access" / "enclave.cedar").read_text()
    assert f'"{Classification.RESTRICTED.value}"' in text


# -- CLI ----------------------------------------------------------------------------------


def test_cli_analyst_and_policy_commands(tmp_path: Path) -> None:
    app = typer.Typer()
    app.callback()(lambda: None)
    register_service_commands(app)
    home = tmp_path / "home"
    Home.init(home)
    runner = CliRunner()
    out = runner.invoke(
        app,
        [
            "analyst",
            "add",
            "alice",
            "--tenant",
            "acme",
            "--role",
            "auditor",
            "--home",
            str(home),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    token = json.loads(out.output)["token"]
    listed = runner.invoke(app, ["analyst", "list", "--home", str(home), "--json"])
    assert listed.exit_code == 0 and token not in listed.output
    assert json.loads(listed.output)[0]["name"] == "alice"
    path = POLICY_DIR / "shard-preferred-shard-replace.toml"
    assert runner.invoke(app, ["policy", "load", str(path), "--home", str(home)]).exit_code == 0
    rt = Runtime.open(Home.open(home), env={})
    try:
        specimen_id = capture_incidents(rt)["shard-maintenance"]
    finally:
        rt.close()
    validated = runner.invoke(
        app,
        [
            "policy",
            "validate",
            "shard.preferred-shard.replace",
            "--specimen",
            specimen_id,
            "--home",
            str(home),
            "--json",
        ],
    )
    assert validated.exit_code == 0, validated.output
    report = json.loads(validated.output)
    assert report["ok"] and report["preview"]["parameters"][0]["schema_valid"]
    assert "shard-b" not in validated.output and "shard-a" not in validated.output
    assert (
        runner.invoke(
            app, ["policy", "activate", "shard.preferred-shard.replace", "--home", str(home)]
        ).exit_code
        == 0
    )
    shown = runner.invoke(
        app, ["policy", "list", "--status", "active", "--home", str(home), "--json"]
    )
    assert [p["id"] for p in json.loads(shown.output)] == ["shard.preferred-shard.replace"]
    assert (
        runner.invoke(
            app, ["policy", "retire", "shard.preferred-shard.replace", "--home", str(home)]
        ).exit_code
        == 0
    )
    bad = runner.invoke(app, ["policy", "list", "--status", "sideways", "--home", str(home)])
    assert bad.exit_code != 0


def test_a_categorical_outcome_is_bounded_but_a_score_without_bounds_is_not(
    runtime: Runtime, captured: dict[str, str]
) -> None:
    from enclave.capture import capture
    from enclave.governance import is_categorical as _categorical
    from tests.agents.validity_verdict_agents import BASELINE_INPUTS, CATEGORICAL_AGENT

    routed = capture(runtime, CATEGORICAL_AGENT, BASELINE_INPUTS, tenant_id="acme", seed=3)
    assert _categorical(runtime.ledger.get_specimen(routed.specimen_id).manifest)
    scored = runtime.ledger.get_specimen(captured["procurement"]).manifest
    assert not _categorical(scored)  # bounded: admitted by its bounds, not as categorical
    assert not _categorical({**scored, "score_bounds": None})  # a score with no bounds


def test_a_policy_may_target_a_nested_member_its_schema_declares() -> None:
    from enclave.governance import field_schema
    from tests.agents.validity_values_agents import ACCOUNT

    nested = InterventionPolicy.from_toml(
        policy_text(field="/limits/daily", strategy="nullify", params=None)
    )
    assert nested.field == "/limits/daily"
    assert field_schema(ACCOUNT, "/limits/daily")["type"] == "number"
    with pytest.raises(Refused) as refused:
        field_schema(ACCOUNT, "/limits/monthly")
    assert refused.value.code == "unknown_field"
    for bad in ("/limits/", "/limits//daily", "limits/daily", "/a b"):
        with pytest.raises(BadInput):
            InterventionPolicy.from_toml(policy_text(field=bad, strategy="nullify", params=None))


_AUDITS = st.builds(
    lambda n, tenant, classification, hold, requester: Resource(
        kind="Audit",
        id=f"au-{n}",
        tenant=tenant,
        classification=classification,
        legal_hold=hold,
        requester=requester,
    ),
    st.integers(0, 10_000),
    st.sampled_from(["acme", "globex"]),
    st.sampled_from(["public", "internal", "confidential", "restricted"]),
    st.booleans(),
    st.sampled_from(["p", "q"]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_AUDITS, max_size=12, unique_by=lambda r: r.id),
    st.sampled_from([("auditor",), ("viewer", "restricted-clearance"), ("tenant-admin",)]),
)
def test_a_batch_of_decisions_is_each_decision_alone(
    access: AccessPolicy, resources: list[Resource], roles: tuple[str, ...]
) -> None:
    """A listing asks Cedar once for a whole page: each answer must be the one that
    resource gets alone (no resource's attributes decide another's)."""
    who = person(*roles)
    batch = access.authorize_many(who, Action.READ_AUDIT, resources, now=T0)
    alone = [access.authorize(who, Action.READ_AUDIT, r, now=T0) for r in resources]
    assert batch == alone


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_AUDITS, min_size=1, max_size=40, unique_by=lambda r: r.id),
    st.lists(
        st.sampled_from(["viewer", "auditor", "restricted-clearance", "tenant-admin"]),
        unique=True,
        max_size=3,
    ),
    st.sampled_from([Action.READ_AUDIT, Action.READ_CERTIFICATE, Action.CANCEL_AUDIT]),
    st.integers(0, 3),
)
def test_remembered_decisions_equal_fresh_ones(
    resources: list[Resource], roles: list[str], action: Action, seconds: int
) -> None:
    """Decisions come from a memo keyed without the resource's id: each must be what
    Cedar answers for that resource alone, asked afresh."""
    who, now = person(*roles), T0 + timedelta(seconds=seconds)
    fresh = AccessPolicy.load()
    context: dict[str, Any] = {
        "purpose": "",
        "time": int(now.timestamp()),
        "inference": False,
        "inference_classification": "",
    }
    expected = [fresh._evaluate(who, action, [r], context)[0] for r in resources]
    remembering = AccessPolicy.load()
    assert remembering.authorize_many(who, action, resources, now=now) == expected
    again = remembering.authorize_many(who, action, resources[::-1], now=now)
    assert again == expected[::-1]
