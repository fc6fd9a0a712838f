"""Replay cuts (``docs/cuts.md``): declared checkpoints whose state capture records, and
audits that start from one.

Specimens are real captures in a real SQLite home; audits run through ``run_audit`` in
isolated workers, except where the property is about the in-process engine.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import BadInput, Home, Runtime
from enclave.capture import AgentSpec, SpecError, capture, decode_payload, load_agent, policy
from enclave.incidents import claims, procurement, shard
from enclave.replay import AuditOutcome, AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import Trajectory, open_specimen, replay_run
from ledger import RunStatus
from ledger.certificates import PREDICATE_TYPE, predicate_problems
from tests.agents import cut_agents
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree

INCIDENTS = {m.AGENT.name: m for m in (procurement, claims, shard)}
CANARIES = (*INCIDENT_CANARIES, cut_agents.CANARY)
SAMPLES = 6

APPROVAL_REVIEW = Intervention(
    Strategy.REPLACE, call_id="main/approval-policy#0", field="/decision", value="REVIEW"
)
CONFIDENCE_056 = Intervention(
    Strategy.REPLACE, call_id="main/supplier_risk#0", field="/confidence", value=0.56
)
CLAIMS_AUTO = Intervention(
    Strategy.REPLACE, call_id="main/review-policy#0", field="/decision", value="AUTO_APPROVE"
)
SHARD_PRESENT = Intervention(
    Strategy.REPLACE, call_id="verifier/partition-readback#0", field="/present", value=True
)
# (incident, cut, an intervention whose target lies after the cut)
FROM_CUT_CASES = [
    ("procurement", "before-retrieval", CONFIDENCE_056),
    ("procurement", "before-retrieval", APPROVAL_REVIEW),
    ("procurement", "before-authority", APPROVAL_REVIEW),
    ("claims", "before-authority", CLAIMS_AUTO),
    ("shard-maintenance", "before-drop", SHARD_PRESENT),
]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("cuts") / "home"))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def specimens(runtime: Runtime) -> dict[str, str]:
    out = {}
    for name, incident in INCIDENTS.items():
        base = incident.BASELINE_INPUT
        out[name] = capture(
            runtime, incident.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        ).specimen_id
    out["counted"] = capture(
        runtime, cut_agents.COUNTED, cut_agents.BASELINE_INPUTS, tenant_id="acme", seed=5
    ).specimen_id
    out["random-first"] = capture(
        runtime, cut_agents.RANDOM_FIRST, cut_agents.BASELINE_INPUTS, tenant_id="acme", seed=5
    ).specimen_id
    return out


def audit_time() -> datetime:
    # an hour after capture: the shard's 30 s lock token has expired by then
    return datetime.now(UTC) + timedelta(hours=1)


def trajectory(runtime: Runtime, specimen: str) -> Trajectory:
    opened = open_specimen(runtime, specimen, job_id="cut-test", lease_seconds=60, now=audit_time())
    return opened.trajectory


def request(specimen: str, intervention: Intervention, **kw: Any) -> AuditRequest:
    options: dict[str, Any] = {"samples": SAMPLES, "seed": 1, "purpose": "cut test", **kw}
    return AuditRequest(
        specimen_id=specimen, intervention=intervention, requester="test", **options
    )


def predicate_of(outcome: AuditOutcome) -> dict[str, Any]:
    assert outcome.envelope is not None, outcome.failure
    envelope = outcome.envelope
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return dict(statement["predicate"])


# -- declaring and recording cuts ----------------------------------------------------


@pytest.mark.parametrize(
    ("cuts", "boundaries"),
    [
        (("a", "a"), ()),  # declared twice
        (("a/b",), ()),  # '/' delimits call ids
        (("x#1",), ()),  # '#' too
        (("lookup",), (cut_agents.LOOKUP,)),  # a boundary's name
        (("random",), ()),  # a built-in step's name
        (["a"], ()),  # not a tuple
    ],
)
def test_bad_cut_declarations_cannot_be_built(cuts: Any, boundaries: Any) -> None:
    with pytest.raises(ValueError, match="cut"):
        AgentSpec(
            name="bad",
            version="1",
            function=lambda ctx, inputs: {},
            inputs={},
            outcome={"score": policy("internal")},
            boundaries=boundaries,
            cuts=cuts,
        )


@pytest.mark.parametrize("misuse", sorted(cut_agents.MISUSES))
def test_a_misused_cut_is_refused_at_capture(runtime: Runtime, misuse: str) -> None:
    agent = cut_agents.MISUSES[misuse]
    specimen = f"sp-cut-{misuse}"
    with pytest.raises(SpecError) as caught:
        capture(
            runtime,
            agent,
            {"key": "K-1", "rounds": 1},
            tenant_id="acme",
            seed=1,
            specimen_id=specimen,
        )
    assert "\n" not in str(caught.value)
    assert runtime.ledger.run_status(specimen) is RunStatus.INCOMPLETE


def test_a_cut_is_recorded_as_one_encrypted_digested_field(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    record = runtime.ledger.get_specimen(specimens["procurement"])
    cuts = [s for s in record.manifest["steps"] if s["kind"] == "cut"]
    assert [(s["name"], s["call_id"]) for s in cuts] == [
        ("before-retrieval", "main/before-retrieval#0"),
        ("before-authority", "main/before-authority#0"),
    ]
    for step in cuts:
        (field,) = step["fields"]
        assert (field["side"], field["path"], field["retention"]) == (
            "response",
            "/state",
            "encrypted",
        )
        assert field["classification"] == "confidential"
        assert field["digest"].startswith("hmac-sha256:")
    # the state decrypts to what the work before the cut returned
    steps = {s.call_id: s for s in trajectory(runtime, specimens["procurement"]).steps}
    template = steps["main/po-template#0"].response
    assert steps["main/before-retrieval#0"].response["state"] == dict(template)
    assessed = steps["main/before-authority#0"].response["state"]
    assert assessed["evidence"] == ["doc-118", "doc-342"]
    assert assessed["confidence"] == steps["main/supplier_risk#0"].response["confidence"]
    # and nothing of it is in the ledger in clear
    assert find_canaries(json.dumps(record.manifest).encode(), CANARIES) == []


# -- the engine: full replay checks the state, a replay from the cut skips the work -----


def test_a_full_replay_checks_the_cut_state_against_the_record(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    recorded = trajectory(runtime, specimens["counted"])
    forged = Trajectory(
        specimen_id=recorded.specimen_id,
        agent=recorded.agent,
        seed=recorded.seed,
        steps=tuple(
            dataclasses.replace(s, response={"state": {**s.response["state"], "value": 0.9}})
            if s.kind == "cut"
            else s
            for s in recorded.steps
        ),
    )
    kw: dict[str, Any] = {"agent": cut_agents.COUNTED, "variant": "baseline", "seed": 5}
    assert replay_run(trajectory=recorded, audit_time=audit_time(), **kw).failure is None
    run = replay_run(trajectory=forged, audit_time=audit_time(), **kw)
    assert run.failure == "divergence"
    # from the cut, the (forged) recorded state is what the run goes on with (on another
    # seed: the run departs at its jitter draw, so the policy call is not held to the record)
    kw["seed"] = 6
    run = replay_run(trajectory=forged, audit_time=audit_time(), from_cut="before-authority", **kw)
    assert run.failure is None and run.layers is not None
    assert run.layers["score"] >= 0.8 - 1e-9  # 0.9 + jitter in [-0.1, 0.1]


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_a_replay_from_the_cut_never_runs_the_work_and_ends_the_same(
    runtime: Runtime, specimens: dict[str, str], seed: int
) -> None:
    recorded = trajectory(runtime, specimens["counted"])
    kw: dict[str, Any] = {
        "trajectory": recorded,
        "agent": cut_agents.COUNTED,
        "variant": "baseline",
        "seed": seed,
        "audit_time": audit_time(),
    }
    before = len(cut_agents.WORK_DONE)
    full = replay_run(**kw)
    assert len(cut_agents.WORK_DONE) == before + 1
    cut = replay_run(from_cut="before-authority", **kw)
    assert len(cut_agents.WORK_DONE) == before + 1  # the work was not run again
    assert full.failure is None and cut.failure is None
    assert cut.layers == full.layers
    assert [c for c, _ in full.served] == ["main/lookup#0", "main/random#0", "main/decide#0"]
    # the call inside the work was neither executed nor served, nor reported unused; the
    # cut itself was served from the record
    assert [c for c, _ in cut.served] == [
        "main/before-authority#0",
        "main/random#0",
        "main/decide#0",
    ]
    assert dict(cut.served)["main/before-authority#0"] == "record"
    assert "main/lookup#0" not in cut.unused


@pytest.mark.parametrize(
    ("name", "cut"), [(n, c) for n in INCIDENTS for c in INCIDENTS[n].AGENT.cuts]
)
def test_each_reference_incident_replays_from_each_cut_with_less_work(
    runtime: Runtime, specimens: dict[str, str], name: str, cut: str
) -> None:
    incident = INCIDENTS[name]
    recorded = trajectory(runtime, specimens[name])
    for seed in (incident.BASELINE_INPUT["seed"], 1234):
        kw: dict[str, Any] = {
            "trajectory": recorded,
            "agent": incident.AGENT,
            "variant": "baseline",
            "seed": seed,
            "audit_time": audit_time(),
        }
        full, from_cut = replay_run(**kw), replay_run(from_cut=cut, **kw)
        assert full.failure is None and from_cut.failure is None
        assert from_cut.layers == full.layers
        assert full.unverifiable_effects == from_cut.unverifiable_effects
        calls = [c for c, _ in full.served]
        cut_step = next(s for s in recorded.steps if s.kind == "cut" and s.name == cut)
        skipped = {s.call_id for s in recorded.steps if 0 < s.seq < cut_step.seq}
        skipped -= {s.call_id for s in recorded.steps if s.kind in ("clock", "cut")}
        assert skipped, "a reference cut stands for some work"
        cuts = {s.call_id for s in recorded.steps if s.kind == "cut"}
        made = [c for c, _ in from_cut.served if c not in cuts]
        assert (cut_step.call_id, "record") in from_cut.served
        assert not skipped & set(made)
        assert len(made) == len(calls) - len(skipped)


# -- audits from a cut -------------------------------------------------------------------

_FULL: dict[tuple[str, str], AuditOutcome] = {}


def _full_audit(runtime: Runtime, specimen: str, intervention: Intervention) -> AuditOutcome:
    key = (specimen, json.dumps(intervention.to_dict(), sort_keys=True))
    if key not in _FULL:
        _FULL[key] = run_audit(runtime, request(specimen, intervention), now=audit_time())
    return _FULL[key]


@pytest.mark.parametrize(("name", "cut", "intervention"), FROM_CUT_CASES)
def test_an_audit_from_a_cut_classifies_like_a_full_audit_and_names_the_cut(
    runtime: Runtime,
    specimens: dict[str, str],
    name: str,
    cut: str,
    intervention: Intervention,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    specimen = specimens[name]
    full = _full_audit(runtime, specimen, intervention)
    from_cut = run_audit(runtime, request(specimen, intervention, from_cut=cut), now=audit_time())
    assert full.failure is None and from_cut.failure is None, (full.failure, from_cut.failure)
    assert from_cut.classification == full.classification
    assert from_cut.auditability.class_ == full.auditability.class_
    p_full, p_cut = predicate_of(full), predicate_of(from_cut)
    assert predicate_problems(p_cut, PREDICATE_TYPE) == []
    assert "cut" not in p_full and "from_cut" not in p_full["request"]
    assert p_cut["request"]["from_cut"] == cut
    recorded = trajectory(runtime, specimen)
    cut_step = next(s for s in recorded.steps if s.kind == "cut" and s.name == cut)
    assert p_cut["cut"]["name"] == cut and p_cut["cut"]["call_id"] == cut_step.call_id
    # the certificate names no call (v3): the cut's own boundary was served from the
    # record (no substitute served it), and the calls inside its work were not made
    inside = {
        s.call_id
        for s in recorded.steps
        if 0 < s.seq < cut_step.seq and s.kind not in ("clock", "cut")
    }
    assert inside and cut not in p_cut["substituted"]
    assert {(r["arm"], r["calls"]) for r in p_cut["served_by"]} >= {
        (arm, "recorded") for arm in ("baseline", "intervened", "placebo")
    }
    assert p_cut["cut"]["calls_before"] >= len(inside)
    # the requested cut is in the ledger's audit request
    (entry,) = runtime.ledger.entries(kind="audit.requested", subject=from_cut.audit_id)
    assert entry.body["from_cut"] == cut
    assert find_canaries(caplog.text.encode(), CANARIES) == []


def test_a_forged_cut_in_a_certificate_breaks_its_rules(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    outcome = run_audit(
        runtime,
        request(specimens["claims"], CLAIMS_AUTO, from_cut="before-authority"),
        now=audit_time(),
    )
    predicate = predicate_of(outcome)
    assert predicate_problems(predicate, PREDICATE_TYPE) == []
    renamed = {**predicate, "cut": {**predicate["cut"], "name": "before-effect"}}
    assert predicate_problems(renamed, PREDICATE_TYPE)
    dropped = {k: v for k, v in predicate.items() if k != "cut"}
    assert predicate_problems(dropped, PREDICATE_TYPE)
    unnamed = {
        **predicate,
        "request": {k: v for k, v in predicate["request"].items() if k != "from_cut"},
    }
    assert predicate_problems(unnamed, PREDICATE_TYPE)


@pytest.mark.parametrize(
    ("which", "intervention", "cut", "message"),
    [
        ("procurement", CONFIDENCE_056, "before-authority", "target lies before the cut"),
        (
            "procurement",
            Intervention(Strategy.REVISION, revision=("model", "r2")),
            "before-authority",
            "target lies before the cut",
        ),
        ("procurement", APPROVAL_REVIEW, "before-nothing", "no cut of that name"),
        (
            "random-first",
            Intervention(Strategy.REPLACE, call_id="main/decide#0", field="/decision", value="LOW"),
            "before-authority",
            "randomness before the cut",
        ),
    ],
)
def test_an_audit_from_an_unusable_cut_is_refused_in_one_line(
    runtime: Runtime,
    specimens: dict[str, str],
    which: str,
    intervention: Intervention,
    cut: str,
    message: str,
) -> None:
    with pytest.raises(BadInput, match=message) as caught:
        run_audit(runtime, request(specimens[which], intervention, from_cut=cut), now=audit_time())
    text = str(caught.value)
    assert "\n" not in text and find_canaries(text.encode(), CANARIES) == []


@pytest.mark.parametrize("name", ["", "a/b", "a b", "x" * 65, 7])
def test_a_bad_cut_name_cannot_be_requested(name: Any) -> None:
    with pytest.raises(BadInput):
        request("sp-x", APPROVAL_REVIEW, from_cut=name)


def test_a_request_round_trips_its_cut() -> None:
    built = request("sp-x", APPROVAL_REVIEW, from_cut="before-authority")
    assert AuditRequest.from_dict(built.to_dict()) == built
    assert "from_cut" not in request("sp-x", APPROVAL_REVIEW).to_dict()


def test_cut_state_never_leaves_the_payload_store(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    # after every capture and audit above: the home holds no canary outside ciphertext
    assert scan_tree(runtime.home.root, CANARIES) == {}
    assert load_agent("procurement").cuts == ("before-retrieval", "before-authority")


def test_the_counted_work_state_decodes_as_recorded(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    steps = trajectory(runtime, specimens["counted"]).steps
    state = next(s for s in steps if s.kind == "cut").response["state"]
    assert set(state) == {"value", "digest", "note"}
    assert decode_payload(b"\x01" + json.dumps(state).encode()) == state


# -- auditability decided at seal ------------------------------------------------------


@pytest.mark.parametrize("case", sorted(cut_agents.PAYING))
def test_an_irreversible_effect_decides_the_sealed_auditability(
    runtime: Runtime, case: str
) -> None:
    agent, expected = cut_agents.PAYING[case]
    specimen = capture(
        runtime, agent, cut_agents.BASELINE_INPUTS, tenant_id="acme", seed=1
    ).specimen_id
    sealed = runtime.ledger.get_specimen(specimen).manifest["auditability"]
    assert sealed["class"] == expected
    if expected == "auditable":
        assert sealed["cut"] is None and sealed["effect"] is None
    else:
        assert sealed["cut"] == expected.rpartition(" ")[2]
        assert sealed["effect"] == "main/pay#0"


def test_the_reference_incidents_are_sealed_with_their_auditability(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    sealed = {
        name: runtime.ledger.get_specimen(specimens[name]).manifest["auditability"]["class"]
        for name in INCIDENTS
    }
    assert sealed == {
        "procurement": "auditable",
        "claims": "auditable",
        # drop_partition is irreversible and has no dry-run substitute
        "shard-maintenance": "not-auditable-beyond before-drop",
    }


def test_a_release_report_row_of_an_observable_only_audit_is_not_auditable() -> None:
    from enclave.release import label_of

    # the row's outcome comes from the audit; its sealed cut (``sealed``) from the
    # manifest (tests/unit/release/test_release_regress.py)
    observable = {"classification": "observable-only", "effect": None}
    assert label_of(observable) == ("not-auditable", "observable-only")
    assert label_of(None) == ("not-auditable", "failed")
    assert label_of(None, refused=True) == ("not-auditable", "refused")
    equivalent = {"classification": "equivalent", "effect": {"flips": 0}}
    assert label_of(equivalent) == ("equivalent", None)
    # equivalent in its score, but a load-bearing layer changed: the decision held, a
    # layer did not, and the gate must not pass it
    moved = {"classification": "equivalent", "effect": {"flips": 0, "layer_changes": {"x": "some"}}}
    assert label_of(moved) == ("layer-changed", None)
    ignored = {**moved, "request": {"tolerances": {"ignored": ["x"]}}}
    assert label_of(ignored) == ("equivalent", None)
