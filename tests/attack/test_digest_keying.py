"""Digests that reach analysts or operators are keyed per specimen, place and purpose.

The attack: a REPLACE audit's certificate carried the tenant-keyed digest of the
requested value, which equalled the field digest of any specimen holding that value,
and equal digests inside one specimen showed equal values. ``docs/digests.md``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime, utc_now
from enclave.capture import capture
from enclave.incidents import procurement, shard
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.service import specimen_detail
from ledger import canonical_json
from tests.support import cli_runner

RISK = "main/supplier_risk#0"
INPUTS = "main/inputs#0"
APPROVAL = "main/approval-policy#0"
DIGEST = re.compile(r"hmac-sha256:[0-9a-f]{64}")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path / "home"), env={})
    yield rt
    rt.close()


def _capture(runtime: Runtime, confidence: float) -> str:
    inputs = {**procurement.BASELINE_INPUT["inputs"], "live_supplier_confidence": confidence}
    return capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=41).specimen_id


def _view(runtime: Runtime, specimen: str) -> dict[tuple[str, str, str], str | None]:
    """(call, side, path) -> the digest the REST API's specimen detail publishes."""
    detail = specimen_detail(runtime.ledger.get_specimen(specimen))
    return {
        (c["call_id"], f["side"], f["path"]): f["digest"]
        for c in detail["calls"]
        for f in c["fields"]
    }


def _replace(specimen: str, value: float) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REPLACE, call_id=RISK, field="/confidence", value=value),
        purpose="digest keying",
        requester="analyst-1",
        samples=2,
    )


def _predicate(runtime: Runtime, request: AuditRequest) -> dict[str, Any]:
    outcome = run_audit(runtime, request, now=utc_now())
    assert outcome.envelope is not None, outcome.failure
    envelope = outcome.envelope
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def _digests_in(document: Any) -> set[str]:
    return set(DIGEST.findall(json.dumps(document)))


def test_a_certificate_digest_cannot_be_matched_against_another_specimen(
    runtime: Runtime,
) -> None:
    x = _capture(runtime, 0.70)
    y = _capture(runtime, 0.56)  # Y recorded the value the analyst asks X to take
    first = _predicate(runtime, _replace(x, 0.56))
    asked = first["request"]["parameters"]["digest"]
    assert DIGEST.fullmatch(asked)
    y_view = _view(runtime, y)
    assert asked != y_view[RISK, "response", "/confidence"]
    assert asked != y_view[INPUTS, "response", "/live_supplier_confidence"]
    # no digest of X's certificate appears anywhere in Y's published view or its ledger rows
    y_record = runtime.ledger.get_specimen(y)
    y_published = {d for d in y_view.values() if d} | _digests_in(y_record.manifest)
    assert not _digests_in(first) & y_published
    # the same request on the same specimen and field is recognisably the same request ...
    again = _predicate(runtime, _replace(x, 0.56))
    assert again["request"]["parameters"]["digest"] == asked
    assert (
        again["intervention"]["unchanged_digest_before"]
        == (first["intervention"]["unchanged_digest_before"])
    )
    # ... but on another specimen it is not (Y with the value X recorded: both runs agree
    # on every other field, so before the fix every digest of the two certificates matched)
    on_y = _predicate(runtime, _replace(y, 0.70))
    x_original = next(e for e in first["lineage"] if e["kind"] == "evidence")["original_digest"]
    assert on_y["request"]["parameters"]["digest"] != x_original  # both name the value 0.70
    assert not _digests_in(on_y) & _digests_in(first)


def test_two_specimens_holding_the_same_values_publish_unrelated_digests(
    runtime: Runtime,
) -> None:
    x, y = _capture(runtime, 0.70), _capture(runtime, 0.70)  # the same run, twice
    x_view, y_view = _view(runtime, x), _view(runtime, y)
    assert x_view.keys() == y_view.keys()
    for place, digest in x_view.items():
        if digest is not None:
            assert digest != y_view[place], place
    # the ledger rows operators read are the published form too, step digests included
    xr, yr = runtime.ledger.get_specimen(x), runtime.ledger.get_specimen(y)
    assert not {f.keyed_digest for f in xr.fields if f.keyed_digest} & {
        f.keyed_digest for f in yr.fields if f.keyed_digest
    }
    steps = {s.request_digest for s in xr.steps} | {s.response_digest for s in xr.steps}
    assert not steps & (
        {s.request_digest for s in yr.steps} | {s.response_digest for s in yr.steps}
    )


def test_equal_values_in_two_fields_of_one_specimen_publish_different_digests(
    runtime: Runtime,
) -> None:
    x = _capture(runtime, 0.56)
    view = _view(runtime, x)
    equal_pairs = [
        ((INPUTS, "response", "/live_supplier_confidence"), (RISK, "response", "/confidence")),
        ((INPUTS, "response", "/subject"), (APPROVAL, "request", "/subject")),
    ]
    for a, b in equal_pairs:
        assert view[a] is not None and view[b] is not None
        assert view[a] != view[b], (a, b)
    published = [d for d in view.values() if d is not None]
    assert len(published) == len(set(published))
    # the internal (tenant-wide) digest of a recorded value is published nowhere
    internal = runtime.digests.for_tenant("acme").digest(canonical_json("supplier-074"))
    record = runtime.ledger.get_specimen(x)
    assert internal not in json.dumps(record.manifest)
    assert internal not in {f.keyed_digest for f in record.fields}
    # the CLI's digest column shows the same published digests, shortened
    shown = cli_runner.run_cli(runtime.home.root, "specimens", "show", x)
    assert shown.returncode == 0, shown.stderr
    for a, b in equal_pairs:
        assert str(view[a])[:24] in shown.stdout and str(view[b])[:24] in shown.stdout
    assert internal[:24] not in shown.stdout


def test_a_request_digest_is_not_comparable_with_the_recorded_fields_digest(
    runtime: Runtime,
) -> None:
    x = _capture(runtime, 0.70)
    recorded = _view(runtime, x)[RISK, "response", "/confidence"]
    digester = runtime.digests.for_tenant("acme")
    # the analyst's guess equals the recorded value: its request digest must not say so
    guess = _replace(x, 0.70).to_predicate(call_id=RISK, digester=digester)
    assert guess["parameters"]["digest"] != recorded
    wrong = _replace(x, 0.71).to_predicate(call_id=RISK, digester=digester)
    assert wrong["parameters"]["digest"] != recorded
    # repeatable: the same request on the same specimen and field gives the same digest
    assert _replace(x, 0.70).to_predicate(call_id=RISK, digester=digester) == guess


def test_published_digests_are_keyed_per_specimen_place_and_purpose(runtime: Runtime) -> None:
    digester = runtime.digests.for_tenant("acme")
    internal = digester.digest(canonical_json(0.56))

    def pub(
        specimen: str = "sp-x",
        place: tuple[str, ...] = (RISK, "response", "/c"),
        purpose: str = "field",
    ) -> str:
        return digester.published(internal, specimen_id=specimen, locator=place, purpose=purpose)

    variants = {
        pub(),
        pub(specimen="sp-y"),
        pub(place=(RISK, "response", "/d")),
        pub(place=(RISK, "request", "/c")),
        pub(place=(APPROVAL, "response", "/c")),
        pub(purpose="request"),
        pub(purpose="counterfactual"),
        pub(purpose="unchanged"),
        internal,
    }
    assert len(variants) == 9
    assert pub() == pub()  # deterministic
    # parts are delimited: moving a character between parts gives another key
    assert pub(place=("a", "bc", "")) != pub(place=("ab", "c", ""))
    # another tenant's secret gives another digest for the same place
    other = runtime.digests.for_tenant("globex")
    assert (
        other.published(
            other.digest(canonical_json(0.56)),
            specimen_id="sp-x",
            locator=(RISK, "response", "/c"),
            purpose="field",
        )
        != pub()
    )
    with pytest.raises(ValueError):
        digester.published(internal, specimen_id="sp-x", locator=("a",), purpose="guess")


def test_run_time_identity_digests_are_keyed_per_specimen(runtime: Runtime) -> None:
    # the shard incident's effects return the same idempotency tokens on every run
    base = shard.BASELINE_INPUT
    a, b = (
        capture(runtime, shard.AGENT, base["inputs"], tenant_id="acme", seed=base["seed"])
        for _ in range(2)
    )
    ra, rb = runtime.ledger.get_specimen(a.specimen_id), runtime.ledger.get_specimen(b.specimen_id)
    tokens_a = [s.effect.idempotency_token for s in ra.steps if s.effect is not None]
    tokens_b = [s.effect.idempotency_token for s in rb.steps if s.effect is not None]
    assert len(tokens_a) == len(tokens_b) >= 1
    assert all(DIGEST.fullmatch(t) for t in tokens_a)
    assert not set(tokens_a) & set(tokens_b)
    # declared names stay in clear and equal: they are the agent's vocabulary, not values
    assert [(s.alias, s.resolved) for s in ra.steps] == [(s.alias, s.resolved) for s in rb.steps]


def test_a_specimen_sealed_with_tenant_wide_digests_publishes_none_of_them(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a specimen sealed before per-specimen keying (manifest v2): tenant-wide digests
    monkeypatch.setattr("enclave.capture._seal.MANIFEST_VERSION", 2)
    monkeypatch.setattr(
        "enclave.capture._seal.published_steps", lambda steps, *_, **__: steps, raising=False
    )
    old = _capture(runtime, 0.70)
    assert runtime.ledger.get_specimen(old).manifest["manifest_version"] == 2
    view = _view(runtime, old)
    assert view and all(digest is None for digest in view.values())


def test_the_admission_record_names_the_request_as_its_certificate_will(
    runtime: Runtime,
) -> None:
    from enclave.governance import Analyst, admit_audit
    from enclave.jobs import submit_audit
    from tests.unit.governance.test_governance import T0, active, draft, policy_text

    x, y = _capture(runtime, 0.70), _capture(runtime, 0.56)
    active(runtime, policy_text())
    alice = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="x")
    admitted = admit_audit(
        runtime,
        draft(x, value=0.56),
        analyst=alice,
        now=T0,
        submit=lambda request, key: submit_audit(
            runtime, request, tenant_id="acme", now=T0, idempotency_key=key
        ),
    )
    assert admitted.status.status == "QUEUED"
    (entry,) = runtime.ledger.entries(kind="audit.admitted", subject=x)
    recorded = entry.body["parameters"]["digest"]
    # operators reading the ledger cannot match the request to Y's recorded value ...
    assert recorded != _view(runtime, y)[RISK, "response", "/confidence"]
    assert recorded not in _digests_in(runtime.ledger.get_specimen(y).manifest)
    # ... and the certificate will carry the same request digest
    certificate = _replace(x, 0.56).to_predicate(
        call_id=RISK, digester=runtime.digests.for_tenant("acme")
    )
    assert recorded == certificate["parameters"]["digest"]


def _internal(runtime: Runtime, value: Any) -> str:
    return runtime.digests.for_tenant("acme").digest(canonical_json(value))


def _stored_bytes(home: Path) -> bytes:
    """Every byte the home holds outside the encrypted payload store: the ledger
    database (jobs, audits and entries tables, WAL included), certificates, config."""
    return b"".join(
        p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "payloads" not in p.relative_to(home).parts
    )


def test_no_job_row_or_preview_holds_a_tenant_wide_digest(runtime: Runtime) -> None:
    """A queued audit's job rows (operator-visible) carried the preparation's per-tenant
    digests of the original and the requested value: comparable across every specimen of
    the tenant. Only published forms may be stored or shown."""
    import threading

    from enclave.governance import InterventionPolicy, preview_policy
    from enclave.jobs import audit_status, run_worker, submit_audit

    specimen = _capture(runtime, 0.61)
    audit = submit_audit(runtime, _replace(specimen, 0.33), tenant_id="acme", now=utc_now())
    run_worker(
        lambda: Runtime.open(runtime.home, env={}),
        worker_id="w",
        stop=threading.Event(),
        once=True,
    )
    assert audit_status(runtime, audit.audit_id).status == "COMPLETED"
    tenant_wide = {_internal(runtime, 0.61), _internal(runtime, 0.33)}
    stored = _stored_bytes(runtime.home.root)
    assert not [d for d in tenant_wide if d.encode() in stored]

    policy = InterventionPolicy.from_toml(
        (REPO / "policies/interventions/procurement-supplier-confidence-replace.toml").read_bytes()
    )  # alternates 0.5, 0.56, 0.6, 0.65
    tenant_wide |= {_internal(runtime, v) for v in (0.5, 0.56, 0.6, 0.65)}
    shown = preview_policy(runtime, policy, specimen, now=utc_now())
    assert shown.parameters and shown.parameters[0].original_digest is not None
    assert not _digests_in([p.original_digest for p in shown.parameters]) & tenant_wide
    assert not _digests_in([p.counterfactual_digest for p in shown.parameters]) & tenant_wide
