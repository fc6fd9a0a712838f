"""Causal correctness: the enclave's figures for the reference incidents agree exactly
with figures derived here, independently, from the formulas in DESIGN.md and in the
claims incident's docstring (the incident modules' constants are not imported).
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from scipy.stats import binomtest

from enclave import Refused, Runtime
from enclave.capture import capture, load_agent
from enclave.incidents import claims, procurement, shard
from enclave.replay import AuditOutcome, AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.disclosure import BIN_EDGES, histogram, quantize, quantize_interval
from enclave.replay.runs import apply_intervention, open_specimen, replay_run
from ledger.certificates.statistics import mean_interval

# -- DESIGN.md, reference incident 1, written out -------------------------------------
MODEL_BIAS = {"r1": +0.020, "r2": -0.018}
TEMPLATE_BIAS = {"c1": +0.012, "c2": +0.018}
APPROVAL_THRESHOLD = 0.55
BASELINE_SEED = 41
BASELINE_CONFIDENCE = 0.70


def procurement_score(
    seed: int, *, model: str = "r1", template: str = "c1", confidence: float = BASELINE_CONFIDENCE
) -> float:
    jitter = random.Random(seed).uniform(-0.028, 0.028)
    return 0.500 + MODEL_BIAS[model] + TEMPLATE_BIAS[template] + 0.20 * (confidence - 0.50) + jitter


def procurement_decision(score: float) -> str:
    return "APPROVE" if score >= APPROVAL_THRESHOLD else "REVIEW"


# -- claims: score = fraud score (0 when absent) + Random(seed).uniform(-0.01, 0.01),
#    clamped to [0, 1]; MANUAL_REVIEW when score >= 0.70 ------------------------------
RECORDED_FRAUD_SCORE = 0.82
REVIEW_THRESHOLD = 0.70


def claims_score(seed: int, fraud: float | None) -> float:
    base = 0.0 if fraud is None else fraud
    return min(1.0, max(0.0, base + random.Random(seed).uniform(-0.01, 0.01)))


def claims_decision(score: float) -> str:
    return "MANUAL_REVIEW" if score >= REVIEW_THRESHOLD else "AUTO_APPROVE"


# -- fixtures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def specimens(runtime: Runtime) -> dict[str, str]:
    out = {}
    for incident in (procurement, claims, shard):
        base = incident.BASELINE_INPUT
        out[incident.AGENT.name] = capture(
            runtime, incident.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        ).specimen_id
    return out


AUTHORITATIVE = ("approval-policy", "review-policy")


def audit_time() -> datetime:
    # an hour after capture: the shard's 30 s lock token has expired by then
    return datetime.now(UTC) + timedelta(hours=1)


def statement(outcome: AuditOutcome) -> dict[str, Any]:
    assert outcome.envelope is not None
    envelope = outcome.envelope
    decoded: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return decoded


def audit(
    runtime: Runtime, specimen: str, intervention: Intervention, *, samples: int, seed: int = 1
) -> tuple[AuditOutcome, dict[str, Any]]:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        purpose="purchase-order-review",
        requester="test",
        samples=samples,
        seed=seed,
        # as the shipped claims and procurement policies declare: the approval and review
        # rules' substitutes are the rules themselves (the formulas below rely on it)
        authoritative_substitutes=AUTHORITATIVE,
    )
    outcome = run_audit(runtime, request, now=audit_time())
    return outcome, statement(outcome)["predicate"]


MODEL_R2 = Intervention(Strategy.REVISION, revision=("model", "r2"))
CONFIDENCE_056 = Intervention(
    Strategy.REPLACE, call_id="main/supplier_risk#0", field="/confidence", value=0.56
)


# -- procurement at the recorded seed --------------------------------------------------


def _replay(runtime: Runtime, specimen: str, intervention: Intervention | None, seed: int) -> Any:
    opened = open_specimen(
        runtime, specimen, job_id="causal-check", lease_seconds=60, now=audit_time()
    )
    agent = load_agent(opened.record.agent_name)
    trajectory = opened.trajectory
    if intervention is not None:
        digester = runtime.digests.for_tenant(opened.record.tenant_id)
        trajectory = apply_intervention(
            trajectory, intervention, agent=agent, digester=digester
        ).trajectory
    run = replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="check", audit_time=audit_time()
    )
    assert run.failure is None
    return opened.trajectory, run.layers


def test_baseline_seed_41_score_and_decision(runtime: Runtime, specimens: dict[str, str]) -> None:
    expected = procurement_score(BASELINE_SEED)
    assert procurement_decision(expected) == "APPROVE"
    recorded, layers = _replay(runtime, specimens["procurement"], None, BASELINE_SEED)
    assert recorded.outcome["score"] == expected
    assert recorded.outcome["decision"] == "APPROVE"
    assert layers["score"] == expected and layers["decision"] == "APPROVE"


@pytest.mark.parametrize(
    ("intervention", "expected"),
    [
        (MODEL_R2, procurement_score(BASELINE_SEED, model="r2")),
        (CONFIDENCE_056, procurement_score(BASELINE_SEED, confidence=0.56)),
    ],
    ids=["model-r2", "confidence-0.56"],
)
def test_interventions_at_seed_41(
    runtime: Runtime, specimens: dict[str, str], intervention: Intervention, expected: float
) -> None:
    _, layers = _replay(runtime, specimens["procurement"], intervention, BASELINE_SEED)
    assert layers["score"] == expected
    assert layers["decision"] == procurement_decision(expected)


# -- procurement: 100 paired samples, seeds 1..100 -------------------------------------


def _expected_sweep(intervened: dict[str, Any]) -> dict[str, Any]:
    seeds = range(1, 101)
    base = [procurement_score(s) for s in seeds]
    other = [procurement_score(s, **intervened) for s in seeds]
    deltas = [b - a for a, b in zip(base, other, strict=True)]
    flips = sum(
        procurement_decision(a) != procurement_decision(b) for a, b in zip(base, other, strict=True)
    )
    return {
        "deltas": deltas,
        "mean_delta": math.fsum(deltas) / 100,
        "baseline_rate": sum(procurement_decision(a) == "APPROVE" for a in base) / 100,
        "intervened_rate": sum(procurement_decision(b) == "APPROVE" for b in other) / 100,
        "flips": flips,
    }


@pytest.mark.parametrize(
    ("intervention", "changed"),
    [(MODEL_R2, {"model": "r2"}), (CONFIDENCE_056, {"confidence": 0.56})],
    ids=["model-r1-to-r2", "confidence-0.70-to-0.56"],
)
def test_hundred_sample_sweep_matches_the_formula(
    runtime: Runtime, specimens: dict[str, str], intervention: Intervention, changed: dict[str, Any]
) -> None:
    expected = _expected_sweep(changed)
    # the recorded decision (seed 41) is APPROVE: the recorded-decision rate is the approval rate
    assert procurement_decision(procurement_score(BASELINE_SEED)) == "APPROVE"
    outcome, predicate = audit(runtime, specimens["procurement"], intervention, samples=100)
    effect = predicate["effect"]
    assert predicate["classification"] == "influential"
    assert predicate["auditability"]["class"] == "counterfactual-admissible"
    assert predicate["baseline"]["reproduced"] is True
    # per-sample deltas never leave, nor their histogram (v3): the mean and the Student-t
    # interval of exactly these deltas do, outward at the declared resolution
    assert "deltas" not in effect and "histogram" not in effect
    resolution = predicate["disclosure"]["resolution"]
    assert effect["mean_delta"] == quantize(expected["mean_delta"], resolution)
    mean, lo, hi = mean_interval(expected["deltas"], 0.95)
    assert effect["delta_interval"] == list(quantize_interval(lo, hi, resolution))
    assert effect["baseline_rate"] == expected["baseline_rate"]
    assert effect["intervened_rate"] == expected["intervened_rate"]
    assert effect["flip_rate"] == expected["flips"] / 100
    assert 0 < expected["flips"] < 100  # the sweep is informative either way
    lo, hi = binomtest(expected["flips"], 100).proportion_ci(confidence_level=0.95, method="exact")
    assert effect["flip_interval"] == [pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9)]
    assert effect["delta_interval"][0] <= effect["mean_delta"] <= effect["delta_interval"][1]
    assert predicate["placebo"] == {"passed": True, "max_abs_delta": 0, "flips": 0}
    assert predicate["samples"] == {"count": 100, "seed": 1, "seeds": "1..100"}
    # the outcome handed back agrees with what was signed (and, inside the home, keeps
    # the histogram of exactly these deltas)
    assert outcome.effect is not None and outcome.effect.histogram is not None
    assert outcome.effect.histogram.to_json() == {
        "edges": list(BIN_EDGES),
        "counts": histogram(expected["deltas"]),
    }
    assert outcome.effect.mean_delta == effect["mean_delta"]
    assert outcome.effect.flip_rate == effect["flip_rate"]


def test_unchanged_digest_proof_is_in_the_certificate(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    _, predicate = audit(runtime, specimens["procurement"], CONFIDENCE_056, samples=2)
    iv = predicate["intervention"]
    assert (
        iv["declared_changes"]
        == iv["actual_changes"]
        == ["main/supplier_risk#0#response/confidence"]
    )
    assert iv["unchanged_digest_equal"] is True
    assert iv["unchanged_digest_before"] == iv["unchanged_digest_after"]
    assert iv["unchanged_digest_before"].startswith("hmac-sha256:")


# -- claims ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intervention", "fraud"),
    [
        (Intervention(Strategy.NULLIFY, call_id="main/fraud_score#0", field="/fraud_score"), None),
        (
            Intervention(
                Strategy.PERTURB, call_id="main/fraud_score#0", field="/fraud_score", delta=-0.2
            ),
            RECORDED_FRAUD_SCORE + -0.2,
        ),
    ],
    ids=["nullify", "perturb-0.2"],
)
def test_claims_flip_at_every_seed(
    runtime: Runtime, specimens: dict[str, str], intervention: Intervention, fraud: float | None
) -> None:
    seeds = range(1, 41)
    base = [claims_score(s, RECORDED_FRAUD_SCORE) for s in seeds]
    other = [claims_score(s, fraud) for s in seeds]
    assert all(claims_decision(b) == "MANUAL_REVIEW" for b in base)
    assert all(claims_decision(o) == "AUTO_APPROVE" for o in other)
    _, predicate = audit(runtime, specimens["claims"], intervention, samples=len(seeds))
    effect = predicate["effect"]
    assert predicate["classification"] == "influential"
    assert effect["flip_rate"] == 1
    assert effect["baseline_rate"] == 1 and effect["intervened_rate"] == 0
    deltas = [o - b for b, o in zip(base, other, strict=True)]
    resolution = predicate["disclosure"]["resolution"]
    assert effect["mean_delta"] == quantize(math.fsum(deltas) / len(deltas), resolution)
    assert effect["layer_changes"]["decision"] == "all"  # every seed flipped
    lo, hi = binomtest(len(seeds), len(seeds)).proportion_ci(method="exact")
    assert effect["flip_interval"] == [pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9)]


# -- shard maintenance -------------------------------------------------------------------

NON_CAUSAL_CLAIMS = re.compile(
    r"\b(was not causal|not causal|no causal|had no (effect|influence)|no measurable influence"
    r"|did not (change|cause|influence)|would (still|not) have)\b",
    re.IGNORECASE,
)


def test_shard_audit_is_observable_only_and_concludes_nothing(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    intervention = Intervention(
        Strategy.REPLACE,
        call_id="planner/planner-model#0",
        field="/preferred_shard",
        value="shard-b",
    )
    outcome, predicate = audit(runtime, specimens["shard-maintenance"], intervention, samples=10)
    assert outcome.classification == predicate["classification"] == "observable-only"
    auditability = predicate["auditability"]
    assert auditability["class"] == "observable-only"
    assert auditability["first_unverifiable_step"] == "executor/reserve_lock#0"
    assert "/lock_id" in auditability["live_state_fields"]
    assert predicate["effect"] is None and outcome.effect is None
    not_established = predicate["not_established"]
    assert any(
        "causal" in item and "no counterfactual conclusion" in item for item in not_established
    )
    for item in not_established:
        # the refusal must not read as an acquittal of the planner
        assert not NON_CAUSAL_CLAIMS.search(item), item
        assert "either way" in item or "causal" not in item


# -- the placebo sanity: replacing a value with itself is not an intervention ------------


def test_replace_with_the_recorded_value_is_refused(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    from ledger import list_certificates

    before = list_certificates(runtime.ledger.engine)
    same = Intervention(
        Strategy.REPLACE,
        call_id="main/supplier_risk#0",
        field="/confidence",
        value=BASELINE_CONFIDENCE,
    )
    request = AuditRequest(
        specimen_id=specimens["procurement"],
        intervention=same,
        purpose="placebo check",
        requester="test",
        samples=5,
    )
    with pytest.raises(Refused) as info:
        run_audit(runtime, request, now=audit_time(), audit_id="au-placebo-only")
    assert info.value.code == "no_change"
    failed = runtime.ledger.entries(kind="audit.failed", subject="au-placebo-only")
    assert [e.body["reason"] for e in failed] == ["no_change"]
    assert not runtime.ledger.entries(kind="certificate.issued", subject="au-placebo-only")
    assert list_certificates(runtime.ledger.engine) == before
