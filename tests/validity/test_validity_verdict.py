"""The verdict says how sure it is: a three-way label, the minimum detectable effect,
the recorded seed apart from the population, per-sample rows and how every call was
served — and verification re-derives the label from what the certificate reports.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave import Runtime
from enclave.capture import capture
from enclave.incidents import procurement
from enclave.replay import AuditRequest, Intervention, Strategy, Tolerances, run_audit
from enclave.replay.certificates import RuntimeLedgerLookup, signing_key
from enclave.replay.disclosure import (
    VocabularySize,
    disclosure_bound,
    quantize_interval,
    resolution_for,
)
from enclave.replay.layers import compare_layers
from enclave.replay.reply import ReplyInvalid, Vocabulary, parse_samples
from enclave.replay.runs import RunResult
from enclave.replay.stages import SampleSummary
from enclave.replay.verdict import (
    BASELINE_NOT_REPRODUCED,
    DEFAULT_FLIP_TOLERANCE,
    FAILED,
    NOT_ASSESSED,
    Auditability,
    Verdict,
    auditability_of,
    decide,
)
from enclave.replay.worker import UNRECORDED, summarize_seed
from ledger.certificates import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    predicate_problems,
    verify_certificate,
)
from ledger.certificates.statistics import (
    EQUIVALENT,
    INCONCLUSIVE,
    INFLUENTIAL,
    clopper_pearson,
    effect_label,
    flip_mde,
    mean_interval,
)
from tests.agents import replay_agents as agents
from tests.agents.validity_verdict_agents import BASELINE_INPUTS, CATEGORICAL_AGENT

TOL = Tolerances(score=0.001)


def sample(
    seed: int,
    delta: float | None,
    *,
    flip: bool = False,
    served: tuple[tuple[str, str, str], ...] = (),
) -> SampleSummary:
    return SampleSummary(
        seed=seed,
        delta=delta,
        flip=flip,
        baseline_hit=True,
        intervened_hit=not flip,
        baseline_decision="recorded",
        intervened_decision="other" if flip else "recorded",
        changed_layers=("decision",) if flip else (),
        served=served,
    )


def spread(n: int, centre: float, half_width: float, *, seed: int = 5) -> list[float]:
    rng = random.Random(seed)
    return [centre + rng.uniform(-half_width, half_width) for _ in range(n)]


def population(deltas: Sequence[float | None], flips: Sequence[int] = ()) -> list[SampleSummary]:
    return [sample(1 + i, d, flip=i in flips) for i, d in enumerate(deltas)]


# -- the three-way label on constructed samples ---------------------------------------


def test_an_interval_straddling_the_tolerance_is_inconclusive_not_no_influence() -> None:
    verdict = decide(samples=population(spread(200, 0.001, 0.002)), tolerances=TOL)
    assert verdict.effect is not None and verdict.effect.delta_interval is not None
    lo, hi = verdict.effect.delta_interval
    assert lo < TOL.score < hi  # the interval straddles the tolerance
    assert verdict.classification == INCONCLUSIVE


def test_an_interval_inside_the_tolerance_with_no_flip_is_equivalent() -> None:
    verdict = decide(samples=population(spread(200, 0.0, 0.0004)), tolerances=TOL)
    assert verdict.classification == EQUIVALENT
    assert verdict.effect is not None
    effect = verdict.effect.to_json()
    lo, hi = effect["equivalence"]["delta_interval"]
    assert -TOL.score <= lo <= hi <= TOL.score
    assert effect["equivalence"]["flip_upper"] < effect["flip_tolerance"] == DEFAULT_FLIP_TOLERANCE
    assert effect["flips"] == 0


def test_a_single_flip_in_200_is_inconclusive_not_influential() -> None:
    verdict = decide(samples=population(spread(200, 0.0, 0.0004), flips=[17]), tolerances=TOL)
    assert verdict.classification == INCONCLUSIVE
    assert verdict.effect is not None and verdict.effect.flips == 1


def test_two_flips_are_influential_and_fewer_flips_never_conclude_more() -> None:
    labels = [
        decide(
            samples=population(spread(200, 0.0, 0.0004), flips=range(k)), tolerances=TOL
        ).classification
        for k in range(4)
    ]
    assert labels == [EQUIVALENT, INCONCLUSIVE, INFLUENTIAL, INFLUENTIAL]


def test_a_single_flip_with_a_delta_interval_beyond_tolerance_is_influential() -> None:
    verdict = decide(samples=population(spread(200, -0.04, 0.005), flips=[3]), tolerances=TOL)
    assert verdict.effect is not None and verdict.effect.delta_interval is not None
    assert verdict.effect.delta_interval[1] < -TOL.score
    assert verdict.classification == INFLUENTIAL


def test_too_few_samples_to_bound_the_flip_rate_is_inconclusive() -> None:
    verdict = decide(samples=population([0.0] * 20), tolerances=TOL)
    assert verdict.classification == INCONCLUSIVE
    assert verdict.effect is not None
    effect = verdict.effect.to_json()
    # no flip in 20 leaves a flip rate up to ~14% plausible: above the 5% tolerance
    assert effect["equivalence"]["flip_upper"] > DEFAULT_FLIP_TOLERANCE
    assert effect["mde"]["flip_rate"] == pytest.approx(flip_mde(20), abs=1e-12)


def test_minimum_detectable_effect_is_reported_for_the_sample_count() -> None:
    small_effect = decide(samples=population(spread(20, 0.0, 0.004)), tolerances=TOL).effect
    large_effect = decide(samples=population(spread(2000, 0.0, 0.004)), tolerances=TOL).effect
    assert small_effect is not None and large_effect is not None
    small, large = small_effect.to_json(), large_effect.to_json()
    assert small["mde"]["delta"] > large["mde"]["delta"] >= TOL.score
    assert small["mde"]["flip_rate"] > large["mde"]["flip_rate"] > 0
    # at the MDE, two or more flips in N happen with the declared power
    n, p = 20, small["mde"]["flip_rate"]
    at_least_two = 1 - (1 - p) ** n - n * p * (1 - p) ** (n - 1)
    assert at_least_two == pytest.approx(small["mde"]["power"], abs=1e-6)


def test_categorical_outcomes_are_compared_by_decision_flips() -> None:
    none = decide(samples=population([None] * 200), tolerances=TOL)
    assert none.classification == EQUIVALENT
    assert none.effect is not None and none.effect.outcome == "categorical"
    assert none.effect.mean_delta is None and none.effect.delta_interval is None
    assert none.effect.histogram is None and none.effect.mde.delta is None
    many = decide(samples=population([None] * 200, flips=range(0, 200, 3)), tolerances=TOL)
    assert many.classification == INFLUENTIAL
    one = decide(samples=population([None] * 200, flips=[9]), tolerances=TOL)
    assert one.classification == INCONCLUSIVE


def test_numeric_and_categorical_samples_do_not_mix() -> None:
    verdict = decide(samples=population([0.0] * 100 + [None] * 100), tolerances=TOL)
    assert verdict.classification == FAILED and verdict.failure == "value_out_of_range"


def test_a_categorical_baseline_that_reproduced_is_reproduced() -> None:
    layers = {
        "score": None,
        "decision": "HOLD",
        "proposal": {"decision": "HOLD"},
        "evidence": ["risk_tier"],
        "policy": [],
        "effects": [],
        "readback": [],
    }
    compared = compare_layers(layers, dict(layers), TOL)
    assert all(v["ok"] for v in compared.values())
    assert compared["score"]["delta"] is None
    assert not compare_layers(layers, dict(layers, score=0.5), TOL)["score"]["ok"]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=120),
    centre=st.floats(min_value=-0.01, max_value=0.01),
    width=st.floats(min_value=0.0, max_value=0.01),
    flips=st.integers(min_value=0, max_value=6),
    tolerance=st.sampled_from([1e-9, 1e-4, 0.001, 0.005, 0.02]),
    categorical=st.booleans(),
)
def test_the_label_is_the_one_the_reported_intervals_and_tolerances_imply(
    n: int, centre: float, width: float, flips: int, tolerance: float, categorical: bool
) -> None:
    deltas: list[float | None] = (
        [None] * n if categorical else list(spread(n, centre, width, seed=n))
    )
    verdict = decide(
        samples=population(deltas, flips=range(min(flips, n))),
        tolerances=Tolerances(score=tolerance),
    )
    assert verdict.effect is not None
    effect = verdict.effect.to_json()
    k = effect["flips"]
    assert k == min(flips, n)
    assert effect["flip_interval"] == list(clopper_pearson(k, n))
    eq = effect["equivalence"]
    assert eq["flip_upper"] == clopper_pearson(k, n, 0.90)[1]
    outside = effect["delta_interval"] is not None and (
        effect["delta_interval"][0] > tolerance or effect["delta_interval"][1] < -tolerance
    )
    inside = eq["delta_interval"] is None or (
        -tolerance <= eq["delta_interval"][0] and eq["delta_interval"][1] <= tolerance
    )
    if verdict.classification == INFLUENTIAL:
        assert outside or k >= 2
    elif verdict.classification == EQUIVALENT:
        assert inside and k == 0 and eq["flip_upper"] < effect["flip_tolerance"]
        assert not outside
    else:
        assert verdict.classification == INCONCLUSIVE
        assert not outside and k < 2
        assert not (inside and k == 0 and eq["flip_upper"] < effect["flip_tolerance"])
    assert verdict.classification == effect_label(
        delta_interval=effect["delta_interval"],
        equivalence_interval=eq["delta_interval"],
        score_tolerance=tolerance,
        flips=k,
        flip_upper=eq["flip_upper"],
        flip_tolerance=effect["flip_tolerance"],
    )
    # the reported (quantised) interval holds the exact one: rounding only widens it
    if not categorical:
        _, exact_lo, exact_hi = mean_interval([d for d in deltas if d is not None])
        lo, hi = effect["delta_interval"]
        assert lo <= max(-1.0, exact_lo) and min(1.0, exact_hi) <= hi
        assert lo <= effect["mean_delta"] <= hi


@settings(max_examples=300, deadline=None)
@given(
    a=st.floats(min_value=-1.5, max_value=1.5, allow_nan=False),
    b=st.floats(min_value=-1.5, max_value=1.5, allow_nan=False),
    tolerance=st.sampled_from([1e-9, 1e-4, 0.001, 0.0123456, 0.05, 0.3]),
)
def test_reported_intervals_hold_the_exact_ones(a: float, b: float, tolerance: float) -> None:
    low, high = min(a, b), max(a, b)
    resolution = resolution_for(tolerance)
    lo, hi = quantize_interval(low, high, resolution)
    assert lo <= max(-1.0, low) and min(1.0, high) <= hi  # widened, never narrowed
    for end in (lo, hi):
        assert abs(end) == 1 or abs(end / resolution - round(end / resolution)) < 1e-6
    assert hi - lo <= (high - low) + 2 * resolution + 1e-9  # by at most a step each side


# -- recorded seed, rows, layers, served-by ------------------------------------------


def test_the_recorded_seed_is_reported_apart_from_the_population() -> None:
    samples = population(spread(100, 0.0, 0.0004), flips=[40])  # seed 41 flipped
    verdict = decide(samples=samples, tolerances=TOL, recorded_seed=41)
    assert verdict.recorded_seed is not None
    seen = verdict.recorded_seed.to_json()
    assert seen == {
        "seed": 41,
        "sampled": True,
        "flip": True,
        "baseline": "recorded",
        "intervened": "other",
        "delta": seen["delta"],
    }
    outside = decide(samples=samples, tolerances=TOL, recorded_seed=4000)
    assert outside.recorded_seed is not None
    assert outside.recorded_seed.to_json() == {"seed": 4000, "sampled": False}
    assert decide(samples=samples, tolerances=TOL).recorded_seed is None


def test_rows_layers_and_served_by_are_counted_over_samples() -> None:
    served = (
        ("baseline", "main/risk_tier#0", "record"),
        ("intervened", "main/risk_tier#0", "intervention"),
        ("intervened", "main/extra#0", "unused"),
        ("placebo", "main/risk_tier#0", "intervention"),
    )
    samples = [
        sample(1 + i, 0.0, flip=i < 3, served=served if i % 2 else served[:2]) for i in range(100)
    ]
    verdict = decide(samples=samples, tolerances=TOL)
    assert verdict.sample_rows is not None and len(verdict.sample_rows) == 100
    assert verdict.sample_rows[0] == [1, "recorded", "other", True]
    assert verdict.effect is not None
    assert verdict.effect.layer_changes["decision"] == 3
    assert verdict.effect.layer_changes["score"] == 0
    table = {(r["arm"], r["call"]): r for r in verdict.served_by or []}
    assert table[("intervened", "main/risk_tier#0")]["intervention"] == 100
    assert table[("intervened", "main/extra#0")]["unused"] == 50
    assert table[("intervened", "main/extra#0")]["absent"] == 50
    assert table[("placebo", "main/risk_tier#0")]["absent"] == 50
    for row in table.values():
        counts = [row[k] for k in ("record", "substitute", "intervention", "unservable")]
        assert sum(counts) + row["unused"] + row["absent"] == 100


def test_calls_the_record_does_not_know_are_one_row_per_arm() -> None:
    # new_call #k is numbered per run: #0 of one sample is not #0 of another
    first = (
        ("intervened", "new_call #0", "substitute"),
        ("intervened", "new_call #1", "unservable"),
    )
    second = (("intervened", "new_call #0", "substitute"),)
    samples = [sample(1, 0.0, served=first), sample(2, 0.0, served=second), sample(3, 0.0)]
    table = decide(samples=samples, tolerances=TOL).served_by
    assert table == [
        {
            "arm": "intervened",
            "call": "new calls",
            "record": 0,
            "substitute": 1,
            "intervention": 0,
            "unservable": 1,
            "unused": 0,
            "absent": 1,
        }
    ]


def test_auditability_round_trips_through_its_predicate_json() -> None:
    # a preparation stores it as JSON and the finalizer reads it back
    observable = auditability_of(
        [
            SampleSummary(seed=1, live_state_reads=(("main/lease#0", "/lease_id"),)),
            SampleSummary(seed=2, unverifiable_effects=("main/pay#0",), unserved_effects=("x#0",)),
        ]
    )
    for auditability in (observable, auditability_of([]), Auditability.not_assessed()):
        assert Auditability.from_json(auditability.to_json()) == auditability
    assert observable.to_json()["first_unverifiable_step"] == "main/pay#0"


def test_failed_and_unreproduced_audits_are_not_assessed() -> None:
    admissible = auditability_of([])
    assert admissible.class_ == "counterfactual-admissible"
    for label in (FAILED, BASELINE_NOT_REPRODUCED):
        verdict = Verdict(classification=label, auditability=admissible)
        assert verdict.auditability.class_ == NOT_ASSESSED


def test_an_unservable_run_fails_the_audit_naming_the_call_it_could_not_serve() -> None:
    served = (
        ("baseline", "main/tool#1", "record"),
        ("intervened", "main/tool#0", "intervention"),
        ("intervened", "main/tool#1", "unservable"),
    )
    failed = dataclasses.replace(
        sample(4, None), failure="unservable", failure_variant="intervened", served=served
    )
    verdict = decide(samples=[sample(3, 0.0), failed], tolerances=TOL)
    assert verdict.classification == FAILED and verdict.failure == "unservable"
    assert verdict.failure_detail == "intervened run on seed 4: main/tool#1 unservable"
    raised = dataclasses.replace(failed, failure="agent_error")
    assert decide(samples=[raised], tolerances=TOL).failure_detail == "intervened run on seed 4"


# -- what crosses the worker boundary ------------------------------------------------


def _runs(
    served: tuple[tuple[str, str], ...],
    unused: tuple[str, ...] = (),
    extrapolated: tuple[str, ...] = (),
) -> list[RunResult]:
    layers = {
        "score": 0.5,
        "decision": "A",
        "proposal": {"decision": "A"},
        "evidence": [],
        "policy": [],
        "effects": [],
        "readback": [],
    }
    return [
        RunResult(
            seed=3,
            variant=v,
            failure=None,
            failure_detail=None,
            layers=dict(layers, decision=DECISION_CANARY) if v == "intervened" else layers,
            served=served,
            unused=unused,
            extrapolated=extrapolated if v == "intervened" else (),
        )
        for v in ("baseline", "intervened", "placebo")
    ]


DECISION_CANARY = "CANARY-d3c1s10n"

VOCAB = Vocabulary(
    calls=frozenset({"main/tool#0", "main/tool#1"}),
    effects=frozenset(),
    live_state=frozenset(),
    proposal_fields=("decision",),
)


def test_served_by_crosses_with_names_from_the_vocabulary_only() -> None:
    canary = "main/CANARY-5b1e#0"
    summary = summarize_seed(
        *_runs((("main/tool#0", "record"), (canary, "substitute")), ("main/tool#1",)),
        recorded_decision="A",
    )
    assert summary.baseline_decision == "recorded" and summary.intervened_decision == "other"
    assert summary.changed_layers == ("decision",)
    wire = json.loads(json.dumps({"samples": [summary.to_dict()]}))
    parsed = parse_samples(wire, [3], VOCAB)[0]
    assert "CANARY" not in json.dumps(parsed.to_dict())  # neither the call nor the decision
    assert ("intervened", "new_call #0", "substitute") in parsed.served
    assert ("baseline", "main/tool#1", "unused") in parsed.served


def test_substitute_answers_cross_with_boundary_names_from_the_record_only() -> None:
    canary = "CANARY-7a2b"
    summary = summarize_seed(
        *_runs((("main/tool#0", "substitute"),), extrapolated=("tool", canary)),
        recorded_decision="A",
        boundaries=frozenset({"tool"}),
    )
    assert summary.substituted == (("intervened", UNRECORDED), ("intervened", "tool"))
    vocab = Vocabulary(
        calls=VOCAB.calls,
        effects=frozenset(),
        live_state=frozenset(),
        proposal_fields=("decision",),
        boundaries=frozenset({"tool"}),
    )
    wire = json.loads(json.dumps({"samples": [summary.to_dict()]}))
    parsed = parse_samples(wire, [3], vocab)[0]
    assert parsed.substituted == summary.substituted
    assert canary not in json.dumps(parsed.to_dict())
    for tampered in (
        [["intervened", canary]],  # a name the record does not hold
        [["intervened", "tool"], ["intervened", "tool"]],  # twice
        [["nowhere", "tool"]],
    ):
        item = dict(summary.to_dict(), substituted=tampered)
        with pytest.raises(ReplyInvalid):
            parse_samples({"samples": [item]}, [3], vocab)
    # an arm no substitute served cannot have had a substitute's answer
    served = summarize_seed(*_runs((("main/tool#0", "record"),)), recorded_decision="A")
    item = dict(served.to_dict(), substituted=[["intervened", "tool"]])
    with pytest.raises(ReplyInvalid):
        parse_samples({"samples": [item]}, [3], vocab)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda d: d.update(intervened_decision="APPROVE"),  # a decision outside the vocabulary
        lambda d: d.update(served=[["baseline", "main/tool#0", "live"]]),  # no such way
        lambda d: d.update(served=[["baseline", "main/tool#0", "intervention"]]),
        lambda d: d.update(served=[["baseline", "main/tool#0", "unused"]] * 2),
        lambda d: d.update(served=[["intervened", "main/zzz#0", "unused"]]),  # not recorded
        lambda d: d.update(changed_layers=["score", "secret"]),
        lambda d: d.update(flip=False),  # labels differ, so the decision flipped
    ],
)
def test_a_reply_outside_the_closed_schema_is_refused(tamper: Any) -> None:
    summary = summarize_seed(*_runs((("main/tool#0", "record"),)), recorded_decision="A")
    item = summary.to_dict()
    tamper(item)
    with pytest.raises(ReplyInvalid):
        parse_samples({"samples": [item]}, [3], VOCAB)


# -- disclosure ---------------------------------------------------------------------


def test_the_disclosure_bound_counts_every_new_field() -> None:
    vocab = VocabularySize(calls=6, live_state=1)
    bound = disclosure_bound(samples=100, tolerance=0.01, vocabulary=vocab)
    terms = dict(bound.terms)
    # the recorded seed's (baseline, intervened) decisions from {recorded, other} and a
    # flip that the labels fix except when both are "other": 5 combinations (no delta)
    assert terms["/recorded_seed"] == pytest.approx(math.ceil(math.log2(5) * 100) / 100)
    for name in ("/served_by", "/substituted", "/effect/layer_changes", "/effect/outcome"):
        assert terms[name] > 0, name
    # nothing per sample, nothing stated that the interval implies (v3)
    for name in (
        "/sample_rows",
        "/effect/histogram",
        "/effect/equivalence/delta_interval",
        "/effect/mde/delta",
    ):
        assert name not in terms, name
    # the served-by rows are per arm: more calls name more boundaries, not more rows
    more_calls = disclosure_bound(
        samples=100, tolerance=0.01, vocabulary=VocabularySize(calls=12, live_state=1)
    )
    assert dict(more_calls.terms)["/served_by"] == terms["/served_by"]
    assert dict(more_calls.terms)["/substituted"] > terms["/substituted"]


def test_a_per_sample_bound_counts_every_row_and_every_call() -> None:
    """Granted per-sample detail states a row per sample and exact served-by counts per
    arm and call: the bound grows with N and with the record, and counts each v2 field."""
    vocab = VocabularySize(calls=6, live_state=1)
    tight = dict(disclosure_bound(samples=100, tolerance=0.01, vocabulary=vocab).terms)
    bound = disclosure_bound(samples=100, tolerance=0.01, vocabulary=vocab, per_sample=True)
    terms = dict(bound.terms)
    # a (baseline, intervened) pair of the d decision labels and the flip, per sample
    assert terms["/sample_rows"] == pytest.approx(math.ceil(100 * math.log2(5) * 100) / 100)
    for name in ("/effect/histogram", "/effect/equivalence/delta_interval", "/effect/mde/delta"):
        assert terms[name] > 0, name
    assert terms["/served_by"] > tight["/served_by"]
    assert terms["/effect/layer_changes"] > tight["/effect/layer_changes"]
    assert "/substituted" not in terms  # the per-call rows show it, and are charged
    assert bound.bins is not None and bound.to_dict()["bins"] == bound.bins
    more_calls = disclosure_bound(
        samples=100,
        tolerance=0.01,
        vocabulary=VocabularySize(calls=12, live_state=1),
        per_sample=True,
    )
    assert dict(more_calls.terms)["/served_by"] > terms["/served_by"]
    more_samples = disclosure_bound(samples=1000, tolerance=0.01, vocabulary=vocab, per_sample=True)
    assert more_samples.bits > 256 * 10  # not tight: why it takes a policy's grant


def test_the_disclosure_bound_counts_substitute_answers_per_arm_and_boundary() -> None:
    # a subset of the recorded boundary names and "(unrecorded boundary)", and a count
    bound = disclosure_bound(
        samples=100, tolerance=0.01, vocabulary=VocabularySize(calls=6, live_state=1, boundaries=3)
    )
    expected = math.ceil((4 + math.log2(101)) * 100 - 1e-9) / 100
    assert dict(bound.terms)["/substitute_answers"] == pytest.approx(expected)
    # stored sizes from before boundary names were counted: one name per call at most
    old = VocabularySize.from_dict({"calls": 6, "live_state": 1, "proposal_fields": 4})
    assert old.boundaries == 6


# -- a label resting on a substitute's extrapolation ----------------------------------


def _extrapolated(n: int, flips: Sequence[int] = ()) -> list[SampleSummary]:
    return [
        replace(sample(1 + i, 0.0, flip=i in flips), substituted=(("intervened", "rating"),))
        for i in range(n)
    ]


@pytest.mark.parametrize("flips", [(), (0, 1, 2)], ids=["equivalent", "influential"])
def test_no_confident_label_rests_on_an_unauthorised_substitutes_extrapolation(
    flips: Sequence[int],
) -> None:
    samples = _extrapolated(100, flips)
    honest = decide(samples=samples, tolerances=TOL, authoritative=("rating",))
    assert honest.classification in (EQUIVALENT, INFLUENTIAL)
    assert honest.substitute_answers == {"boundaries": ["rating"], "samples": 100}
    capped = decide(samples=samples, tolerances=TOL, authoritative=("another",))
    assert capped.classification == INCONCLUSIVE
    assert capped.effect == honest.effect  # what was measured is still reported
    # a sample without extrapolation of its own does not lift the cap
    mixed = decide(samples=[*population([0.0] * 99), samples[0]], tolerances=TOL)
    assert mixed.classification == INCONCLUSIVE
    assert mixed.substitute_answers == {"boundaries": ["rating"], "samples": 1}
    # a sample counts once however many arms met the substitute's answers
    both = replace(samples[0], substituted=(("baseline", "rating"), ("intervened", "rating")))
    assert decide(samples=[both, samples[1]], tolerances=TOL).substitute_answers == {
        "boundaries": ["rating"],
        "samples": 2,
    }
    none = decide(samples=population([0.0] * 100), tolerances=TOL)
    assert none.classification == EQUIVALENT
    assert none.substitute_answers == {"boundaries": [], "samples": 0}


# -- end to end ---------------------------------------------------------------------


def _audit(runtime: Runtime, specimen: str, iv: Intervention, samples: int) -> dict[str, Any]:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=iv,
        purpose="purchase-order-review",
        requester="test",
        samples=samples,
        seed=1,
        # as the procurement policies declare: the approval rule's substitute is the rule
        authoritative_substitutes=("approval-policy",),
    )
    outcome = run_audit(runtime, request, now=datetime.now(UTC) + timedelta(hours=1))
    assert outcome.envelope is not None, (outcome.failure, outcome.failure_detail)
    envelope = outcome.envelope
    key = signing_key(runtime).public_key
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    assert report.ok, report.to_dict()
    assert "certificate v3" in report.checks[2].detail
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["predicateType"] == PREDICATE_TYPE != PREDICATE_TYPE_V1
    predicate: dict[str, Any] = statement["predicate"]
    assert predicate_problems(predicate) == []
    return predicate


def _served_rows_cover_the_samples(predicate: dict[str, Any]) -> None:
    arms = {row["arm"] for row in predicate["served_by"]}
    assert arms == {"baseline", "intervened", "placebo"}
    for row in predicate["served_by"]:
        ways = ("record", "substitute", "intervention", "unservable", "unused", "absent")
        marks = [row[w] for w in ways if row[w] != "none"]
        assert marks == ["all"] or (len(marks) >= 2 and set(marks) == {"some"}), row


def test_end_to_end_categorical_agent_is_compared_by_flips(runtime: Runtime) -> None:
    specimen = capture(
        runtime, CATEGORICAL_AGENT, BASELINE_INPUTS, tenant_id="acme", seed=7
    ).specimen_id
    n = 80
    same = _audit(
        runtime,
        specimen,
        Intervention(Strategy.REPLACE, call_id="main/risk_tier#0", field="/confidence", value=0.5),
        n,
    )
    assert same["baseline"]["reproduced"] is True
    assert same["classification"] == "equivalent"
    assert same["effect"]["outcome"] == "categorical" and same["effect"]["mean_delta"] is None
    _served_rows_cover_the_samples(same)
    flipped = _audit(
        runtime,
        specimen,
        Intervention(Strategy.REPLACE, call_id="main/risk_tier#0", field="/tier", value="low"),
        n,
    )
    assert flipped["classification"] == "influential"
    assert flipped["effect"]["flips"] == n
    assert "sample_rows" not in flipped
    assert flipped["recorded_seed"] == {
        "seed": 7,
        "sampled": True,
        "flip": True,
        "baseline": "recorded",
        "intervened": "other",
    }
    # the intervened arm's recorded calls: the target by the intervention in every sample,
    # the others from the record
    target = next(
        r for r in flipped["served_by"] if (r["arm"], r["calls"]) == ("intervened", "recorded")
    )
    assert target["intervention"] != "none"
    assert flipped["effect"]["layer_changes"]["decision"] == "all"


def test_end_to_end_numeric_audit_carries_the_served_by_table(runtime: Runtime) -> None:
    base = procurement.BASELINE_INPUT
    specimen = capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
    ).specimen_id
    n = 60
    predicate = _audit(
        runtime, specimen, Intervention(Strategy.REVISION, revision=("model", "r2")), n
    )
    assert predicate["classification"] == "influential"
    assert predicate["auditability"]["class"] == "counterfactual-admissible"
    _served_rows_cover_the_samples(predicate)
    assert "sample_rows" not in predicate and 0 < predicate["effect"]["flips"] <= n
    assert predicate["recorded_seed"]["seed"] == base["seed"]
    terms = {t["field"] for t in predicate["disclosure"]["terms"]}
    assert {"/served_by", "/substituted", "/recorded_seed"} <= terms


def test_end_to_end_an_unreproduced_baseline_is_not_assessed(runtime: Runtime) -> None:
    specimen = agents.capture_specimen(runtime, agents.UNSEEDED_AGENT)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
        ),
        purpose="engine test",
        requester="test",
        samples=4,
        seed=1,
    )
    outcome = run_audit(runtime, request, now=datetime.now(UTC) + timedelta(hours=1))
    assert outcome.classification == "baseline-not-reproduced"
    assert outcome.auditability.class_ == NOT_ASSESSED
    assert outcome.envelope is not None
    envelope = outcome.envelope
    key = signing_key(runtime).public_key
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    assert report.ok, report.to_dict()
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["auditability"]["class"] == "not-assessed"
    assert predicate["effect"] is None and predicate["served_by"] is None
