"""The finding: one plain-language sentence per certificate, from its signed figures only.

Written as a reader checking the sentence against the certificate would: every label
has its sentence; the sentence never states more than the figures (interval ends round
outward, counts are exact, the label's claim matches the label); it changes when a
figure it states changes; a verifier re-derives it and states none for a certificate
that does not verify; a predicate that fails its checks states none.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave.keys import SigningKey
from ledger import loads
from ledger.certificates import (
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
    PredicateInvalid,
    StaticLedgerLookup,
    envelope_finding,
    failed_finding,
    finding,
    predicate_problems,
    sign_statement,
    verify_certificate,
)
from tests.support.ledger_lookup import lookup_of
from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[3]
GOLDEN_SEED = hashlib.sha256(b"replay-enclave golden certificate key v1").digest()
ADMISSIBLE = (
    " Counterfactual-admissible: every effect re-verified; no live state read after departure."
)


CORPUS = load_script("export-predicate-corpus.py")
GOLDEN = CORPUS.golden("v2")


def _case(name: str) -> dict[str, Any]:
    ops = dict(CORPUS._finding_cases(GOLDEN))[name]
    predicate: dict[str, Any] = CORPUS.apply(GOLDEN, ops)
    assert predicate_problems(predicate, PREDICATE_TYPE_V2) == []
    return predicate


def _consistent(n: int, k: int, **knobs: Any) -> dict[str, Any]:
    predicate: dict[str, Any] = CORPUS.apply(GOLDEN, CORPUS._consistent(GOLDEN, n, k, knobs))
    assert predicate_problems(predicate, PREDICATE_TYPE_V2) == []
    return predicate


# --- one sentence per label ------------------------------------------------------


def test_influential_by_flips_states_counts_and_both_intervals() -> None:
    assert finding(GOLDEN, PREDICATE_TYPE_V2) == (
        "Replacing /model/revision in call decide-1 changed the decision in 13 of 20 paired "
        "runs (65%, 95% interval 40–85%); the score moved by −0.041 (95% interval −0.049 to "
        "−0.032)." + ADMISSIBLE
    )


def test_influential_by_the_score_alone_names_the_tolerance_it_clears() -> None:
    predicate = _consistent(20, 0, interval=(0.01, 0.02), flip_tolerance=0.5)
    assert predicate["classification"] == "influential"
    assert finding(predicate, PREDICATE_TYPE_V2) == (
        "Replacing /model/revision in call decide-1 moved the score by +0.015 (95% interval "
        "+0.010 to +0.020), clear of the tolerance of ±0.001; the decision changed in none of "
        "20 paired runs." + ADMISSIBLE
    )


def test_equivalent_states_the_bounds_that_made_it_so() -> None:
    predicate = _consistent(200, 0, interval=(-0.002, 0.002), flip_tolerance=0.05)
    assert predicate["classification"] == "equivalent"
    assert finding(predicate, PREDICATE_TYPE_V2) == (
        "Replacing /model/revision in call decide-1 made no difference beyond the declared "
        "tolerances: the decision changed in none of 200 paired runs (at most 1.5% at 95% "
        "confidence, below the 5% tolerance); the score moved by 0.000 (90% interval −0.001 "
        "to +0.001, within the tolerance of ±0.001)." + ADMISSIBLE
    )


def test_equivalent_on_a_categorical_outcome_has_no_score_clause() -> None:
    predicate = _consistent(400, 0, categorical=True, flip_tolerance=0.01)
    assert predicate["classification"] == "equivalent"
    text = finding(predicate, PREDICATE_TYPE_V2)
    assert "score" not in text
    assert "none of 400 paired runs (at most 0.8% at 95% confidence" in text


def test_inconclusive_with_no_flip_says_what_cannot_be_ruled_out() -> None:
    predicate = _consistent(20, 0, categorical=True)
    assert predicate["classification"] == "inconclusive"
    assert finding(predicate, PREDICATE_TYPE_V2) == (
        "Not enough evidence to tell whether replacing /model/revision in call decide-1 makes "
        "a difference: no decision changed in 20 paired runs, but a rate up to 14% cannot "
        "be ruled out at 95% confidence (the tolerance is 5%)." + ADMISSIBLE
    )


def test_inconclusive_with_one_flip_says_one_is_not_enough() -> None:
    predicate = _consistent(30, 1, interval=(-0.003, 0.004), flip_tolerance=0.5)
    assert predicate["classification"] == "inconclusive"
    assert finding(predicate, PREDICATE_TYPE_V2) == (
        "Not enough evidence to tell whether replacing /model/revision in call decide-1 makes "
        "a difference: the decision changed in 1 of 30 paired runs (a conclusion needs at "
        "least 2); the score moved by +0.001 (95% interval −0.003 to +0.004), which neither "
        "clears nor stays within the tolerance of ±0.001." + ADMISSIBLE
    )


def test_a_capped_label_says_why_it_is_capped() -> None:
    answers = {"boundaries": ["m"], "samples": 13}
    predicate = CORPUS.apply(
        GOLDEN, [(["substitute_answers"], answers), (["classification"], "inconclusive")]
    )
    assert predicate_problems(predicate, PREDICATE_TYPE_V2) == []
    text = finding(predicate, PREDICATE_TYPE_V2)
    assert text.startswith("Not enough evidence to tell whether replacing")
    assert "the decision changed in 13 of 20 paired runs" in text
    assert (
        "The label is capped at inconclusive: a substitute answered requests the record does "
        "not hold (m), which the request did not declare authoritative." in text
    )


def test_an_unreproduced_baseline_says_nothing_was_measured_and_why() -> None:
    assert finding(_case("baseline not reproduced, two layers"), PREDICATE_TYPE_V2) == (
        "Not assessed: the untouched baseline did not reproduce the recorded run (proposal "
        "differed, the score moved by −0.004), so the effect of replacing /model/revision in "
        "call decide-1 was not measured."
    )


def test_observable_only_says_no_counterfactual_conclusion_and_why() -> None:
    assert finding(_case("observable-only, live state read"), PREDICATE_TYPE_V2) == (
        "Replacing /model/revision in call decide-1 was replayed, but no counterfactual "
        "conclusion is certified: the branch read live-state fields of a served response "
        "after the departure point (first unverifiable step: decide-1)."
    )


def test_a_v1_certificate_states_its_own_label() -> None:
    predicate = CORPUS.golden("v1")
    text = finding(predicate, PREDICATE_TYPE_V1)
    assert text.startswith(
        "This v1 certificate classifies replacing /model/revision in call decide-1 as "
        "decision-flips; the decision changed in 13 of 20 paired runs"
    )


def test_a_failed_audit_establishes_nothing() -> None:
    assert failed_finding("sandbox_unavailable") == (
        "The audit failed (sandbox_unavailable) and no certificate was issued: nothing is "
        "established about the intervention."
    )


@pytest.mark.parametrize(
    ("strategy", "opening"),
    [
        ("NULLIFY", "Removing /model/revision from call decide-1 changed"),
        ("PERTURB", "Perturbing /model/revision in call decide-1 changed"),
        ("REVISION", "Switching call decide-1 to another declared revision changed"),
        ("CODE", "Running the candidate code in place of the recorded agent changed"),
    ],
)
def test_each_strategy_names_the_intervention(strategy: str, opening: str) -> None:
    assert finding(_case(f"strategy {strategy}"), PREDICATE_TYPE_V2).startswith(opening)


# --- never more than the figures -------------------------------------------------

_SHARE = re.compile(r"in (\d+) of (\d+) paired runs? \((\d+)%, 95% interval (\d+)–(\d+)%\)")
_UPPER = re.compile(r"(?:at most|up to) ([\d.]+)% at 95% confidence")


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=400),
    data=st.data(),
    categorical=st.booleans(),
    flip_tolerance=st.sampled_from([0.01, 0.05, 0.2, 0.6]),
)
def test_the_sentence_never_claims_more_than_the_figures(
    n: int, data: st.DataObject, categorical: bool, flip_tolerance: float
) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    knobs: dict[str, Any] = {"flip_tolerance": flip_tolerance}
    if categorical:
        knobs["categorical"] = True
    predicate = _consistent(n, k, **knobs)
    effect, label = predicate["effect"], predicate["classification"]
    text = finding(predicate, PREDICATE_TYPE_V2)
    subject = "Replacing /model/revision in call decide-1"
    openings = {
        "influential": (f"{subject} changed the decision", f"{subject} moved the score"),
        "equivalent": (f"{subject} made no difference",),
        "inconclusive": ("Not enough evidence to tell",),
    }[label]
    assert text.startswith(openings)
    if text.startswith(f"{subject} moved the score"):  # influential by the score alone
        assert k < 2 and (
            effect["delta_interval"][0] > 0.001 or effect["delta_interval"][1] < -0.001
        )
    shares = _SHARE.findall(text)
    if shares:  # the stated interval holds the certified one; the count is exact
        (flips, runs, share, lo, hi), *_ = shares
        assert (int(flips), int(runs)) == (k, n)
        assert abs(int(share) - 100 * k / n) <= 0.5
        assert int(lo) / 100 <= effect["flip_interval"][0] + 1e-12
        assert int(hi) / 100 >= effect["flip_interval"][1] - 1e-12
    for upper in _UPPER.findall(text):  # a bound is never understated
        assert float(upper) / 100 >= effect["equivalence"]["flip_upper"] - 1e-12
    if label == "inconclusive" and k == 0 and "cannot be ruled out" not in text:
        assert effect["equivalence"]["flip_upper"] < flip_tolerance


def test_the_sentence_changes_with_each_figure_it_states() -> None:
    base = finding(GOLDEN, PREDICATE_TYPE_V2)
    for ops in (
        [(["effect", "mean_delta"], -0.040)],
        [(["intervention", "target", "call_id"], "decide-2"), (["request", "call"], "decide-2")],
        [(["auditability", "reason"], "an effect could not be served from the effect store")],
    ):
        changed = CORPUS.apply(GOLDEN, ops)
        if predicate_problems(changed, PREDICATE_TYPE_V2):
            continue
        assert finding(changed, PREDICATE_TYPE_V2) != base
    nudged = _consistent(20, 14)
    assert "14 of 20" in finding(nudged, PREDICATE_TYPE_V2)


def test_the_label_the_sentence_states_is_the_one_the_figures_imply() -> None:
    for n, k in ((20, 0), (20, 1), (20, 2), (200, 0)):
        predicate = _consistent(n, k, interval=(-0.002, 0.002), flip_tolerance=0.05)
        implied = predicate["classification"]  # effect_label of its figures, by the rules
        text = finding(predicate, PREDICATE_TYPE_V2)
        assert (implied == "equivalent") == ("made no difference" in text)
        assert (implied == "inconclusive") == text.startswith("Not enough evidence")


# --- no finding without passing checks ---------------------------------------------


def test_a_predicate_that_fails_its_checks_states_no_finding_and_echoes_nothing() -> None:
    forged = copy.deepcopy(GOLDEN)
    forged["effect"]["flips"] = 19  # the rows and the rate say 13
    forged["request"]["purpose"] = "CANARY-finding-7f3a"
    with pytest.raises(PredicateInvalid) as raised:
        finding(forged, PREDICATE_TYPE_V2)
    assert "CANARY" not in str(raised.value)
    assert "19" not in str(raised.value)


def _signed(predicate: dict[str, Any]) -> tuple[dict[str, Any], Any, StaticLedgerLookup]:
    statement = loads((ROOT / "tests/golden/certificate_v2.statement.json").read_bytes())
    statement["predicate"] = predicate
    key = SigningKey.from_private_bytes(GOLDEN_SEED)
    envelope = sign_statement(statement, key)
    lookup = lookup_of(statement, envelope)
    return envelope, key.public_key, lookup


def test_the_verifier_re_derives_the_finding_of_what_it_verified() -> None:
    envelope, public_key, lookup = _signed(GOLDEN)
    report = verify_certificate(envelope, public_key=public_key, ledger_lookup=lookup)
    assert report.ok
    assert report.finding == finding(GOLDEN, PREDICATE_TYPE_V2)
    assert report.to_dict()["finding"] == report.finding


def test_a_certificate_that_does_not_verify_states_no_finding() -> None:
    envelope, public_key, lookup = _signed(GOLDEN)
    other = Ed25519PrivateKey.generate().public_key()
    report = verify_certificate(envelope, public_key=other, ledger_lookup=lookup)
    assert not report.ok and report.finding is None
    assert report.to_dict()["finding"] is None
    unknown = StaticLedgerLookup(specimens={}, certificates={})
    report = verify_certificate(envelope, public_key=public_key, ledger_lookup=unknown)
    assert not report.ok and report.finding is None and report.to_dict()["finding"] is None


def test_an_envelopes_finding_is_its_predicates_and_a_non_statement_has_none() -> None:
    envelope, _, _ = _signed(GOLDEN)
    assert envelope_finding(envelope) == finding(GOLDEN, PREDICATE_TYPE_V2)
    forged = copy.deepcopy(GOLDEN)
    forged["effect"]["flips"] = 19  # checked unless the caller says it just checked
    with pytest.raises(PredicateInvalid):
        envelope_finding(_signed(forged)[0])
    for payload in ("bm90IGpzb24=", "W10=", "!!", 7):  # not JSON, a list, not base64
        with pytest.raises(PredicateInvalid) as raised:
            envelope_finding({**envelope, "payload": payload})
        assert str(payload) not in str(raised.value)
