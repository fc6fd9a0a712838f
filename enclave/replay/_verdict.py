"""From replayed runs to a verdict: auditability, placebo, effect, classification.

Numbered like "How an audit decides" in docs/audits.md:

1. Any contaminated or failed run fails the audit (no partial score). Exception: once
   the branch is observable-only, a later call the record cannot serve is expected —
   that is what observable-only means — and is reported, not concluded from. An
   ``unservable`` failure's detail names the call that could not be served (a name from
   the specimen's own vocabulary, as in the served-by table).
2. Auditability: the branch is counterfactual-admissible only if every effect it met was
   served from the effect store with a re-verifiable idempotency token and no live-state
   field of a served response was read after the departure point. A failed audit, or one
   whose baseline did not reproduce, is ``not-assessed``: no branch was compared.
3. The placebo (target replaced by its own value) must equal the paired baseline on
   every layer and seed; any difference is an apparatus fault and fails the audit.
4. Effect and label (``_effect``): ``influential``, ``equivalent`` or ``inconclusive``,
   decided on the reported (quantised outward) intervals so a verifier re-derives it;
   the minimum detectable effects for N; per-layer change counts.
5. Reported apart from the population: the recorded seed's own counterfactual (when it
   is among the sampled seeds), per-sample rows (seed, decision labels, flip) and how
   each call of each arm was served, counted over samples (``_served``).
6. What is reported is bounded: quantised numbers, counts, labels from closed
   vocabularies, names from the specimen's own vocabulary.
7. A label may not rest on a substitute's extrapolation. A substitute is checked on
   the recorded requests only; when one answered a call the record does not hold, in
   any arm of any sample, its answer is not observed truth, and the label is capped at
   ``inconclusive`` — unless the request declares that boundary's substitute
   authoritative (``AuditRequest.authoritative_substitutes``, from the intervention
   policy). Either way ``substitute_answers`` names those boundaries and counts the
   samples where it happened, in any arm.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.certificates import AuditabilityClass, AuditabilityReason, AuditLabel

from ._decisions import OTHER, RECORDED
from ._effect import DEFAULT_FLIP_TOLERANCE, MixedOutcomes, effect_of
from ._errors import VALUE_OUT_OF_RANGE
from ._model import Tolerances
from ._quantize import quantize, resolution_for
from ._reported import Auditability, Counterfactual, Effect, Placebo, RecordedSeed
from ._results import SampleSummary
from .worker import AMBIENT_MISSING, served_by_table

__all__ = ["Verdict", "auditability_of", "decide"]

# the labels and classes by their old names (``ledger.certificates`` holds the vocabulary)
NO_INFLUENCE = AuditLabel.NO_INFLUENCE  # v1 certificates only: read, never issued
BASELINE_NOT_REPRODUCED = AuditLabel.BASELINE_NOT_REPRODUCED
OBSERVABLE_ONLY = AuditLabel.OBSERVABLE_ONLY
FAILED = AuditLabel.FAILED
ADMISSIBLE = AuditabilityClass.COUNTERFACTUAL_ADMISSIBLE
NOT_ASSESSED = AuditabilityClass.NOT_ASSESSED
INFLUENTIAL = AuditLabel.INFLUENTIAL
EQUIVALENT = AuditLabel.EQUIVALENT
INCONCLUSIVE = AuditLabel.INCONCLUSIVE
EFFECT_LABELS = (INFLUENTIAL, EQUIVALENT, INCONCLUSIVE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    classification: AuditLabel
    auditability: Auditability
    effect: Effect | None = None
    placebo: Placebo | None = None
    failure: str | None = None
    failure_detail: str | None = None
    recorded_seed: RecordedSeed | None = None
    sample_rows: list[list[Any]] | None = None  # [seed, baseline, intervened, flip]
    served_by: list[dict[str, Any]] | None = None
    # {boundaries, samples}: substitutes' answers to requests the record does not hold
    substitute_answers: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "classification", AuditLabel(self.classification))
        # 2. a failed or unreproduced audit compared nothing: never "admissible"
        if not self.classification.compared:
            object.__setattr__(self, "auditability", Auditability.not_assessed())


def auditability_of(samples: Sequence[SampleSummary]) -> Auditability:
    live_reads = sorted({field for s in samples for _, field in s.live_state_reads})
    read_calls = [call for s in samples for call, _ in s.live_state_reads]
    unverifiable = [c for s in samples for c in s.unverifiable_effects]
    unserved = [c for s in samples for c in s.unserved_effects]
    first = next(iter(unverifiable or unserved or read_calls), None)
    reasons = []
    if unverifiable:
        reasons.append(AuditabilityReason.EFFECT_UNVERIFIABLE)
    if unserved:
        reasons.append(AuditabilityReason.EFFECT_UNSERVED)
    if live_reads:
        reasons.append(AuditabilityReason.LIVE_STATE_READ)
    return Auditability(
        class_=AuditabilityClass.OBSERVABLE_ONLY if reasons else ADMISSIBLE,
        reasons=tuple(reasons) or (AuditabilityReason.ALL_VERIFIED,),
        first_unverifiable_step=first,
        live_state_fields=tuple(live_reads),
    )


def substitute_answers(samples: Sequence[SampleSummary]) -> dict[str, Any]:
    """The boundaries whose substitute answered, in some arm of some sample, a request the
    record does not hold, by name; and in how many samples any of them did. (One count,
    not one per boundary: each would be a channel of its own, see ``_disclosure``.)"""
    names = sorted({b for s in samples for _, b in s.substituted})
    return {"boundaries": names, "samples": sum(1 for s in samples if s.substituted)}


def unauthorised(answers: dict[str, Any], authoritative: Collection[str]) -> list[str]:
    """The boundaries, in order, whose substitute's extrapolation the label would rest on
    though no policy declares it authoritative."""
    return [b for b in answers["boundaries"] if b not in authoritative]


def _labels(sample: SampleSummary) -> tuple[str, str]:
    # rows stored before labels were recorded: "same as recorded" booleans
    return (
        sample.baseline_decision or (RECORDED if sample.baseline_hit else OTHER),
        sample.intervened_decision or (RECORDED if sample.intervened_hit else OTHER),
    )


def _recorded_seed(
    samples: Sequence[SampleSummary],
    seed: int | None,
    resolution: float,
    own: SampleSummary | None = None,
) -> RecordedSeed | None:
    """The counterfactual on the recorded seed: its sample row when the seed was among
    the sampled ones, else ``own`` (the preparation's run of it), else seed only."""
    if seed is None:
        return None
    sampled = next((s for s in samples if s.seed == seed), None)
    found = sampled or (
        own if own is not None and own.seed == seed and own.failure is None else None
    )
    if found is None:
        return RecordedSeed(seed=seed, sampled=False)
    baseline, intervened = _labels(found)
    return RecordedSeed(
        seed=seed,
        sampled=sampled is not None,
        counterfactual=Counterfactual(
            flip=found.flip,
            baseline=baseline,
            intervened=intervened,
            delta=None if found.delta is None else quantize(found.delta, resolution),
        ),
    )


def _failure_detail(sample: SampleSummary) -> str:
    """Which run failed; for an abstention on ambient input, the kinds of input missing
    (closed names, ``AMBIENT_MISSING``); for an unservable run, the call it could not
    serve."""
    detail = f"{sample.failure_variant} run on seed {sample.seed}"
    kinds = sorted({c for _, c, _how in sample.served if c in AMBIENT_MISSING})
    if kinds:
        return detail + f" (not in the record: {', '.join(kinds)})"
    if sample.failure == "unservable":
        call = next(
            (
                call
                for arm, call, how in sample.served
                if arm == sample.failure_variant and how == "unservable"
            ),
            None,
        )
        if call is not None:
            detail += f": {call} unservable"
    return detail


def decide(
    *,
    samples: Sequence[SampleSummary],
    tolerances: Tolerances,
    flip_tolerance: float = DEFAULT_FLIP_TOLERANCE,
    recorded_seed: int | None = None,
    recorded_sample: SampleSummary | None = None,
    authoritative: Collection[str] = (),
) -> Verdict:
    if not 0 <= flip_tolerance <= 1:
        raise ValueError("a flip tolerance lies in [0, 1]")
    auditability = auditability_of(samples)
    observable_only = auditability.class_ == AuditabilityClass.OBSERVABLE_ONLY
    served_by = served_by_table((s.served for s in samples), len(samples))
    answers = substitute_answers(samples)
    # 1. failed runs
    for sample in samples:
        if sample.failure is None:
            continue
        if (
            observable_only
            and sample.failure == "unservable"
            and sample.failure_variant == "intervened"
        ):
            continue
        return Verdict(
            classification=FAILED,
            auditability=auditability,
            failure=sample.failure,
            failure_detail=_failure_detail(sample),
        )
    # 2. observable-only: report how calls were served, do not conclude
    if observable_only:
        return Verdict(
            classification=OBSERVABLE_ONLY,
            auditability=auditability,
            served_by=served_by,
            substitute_answers=answers,
        )
    # 3. placebo
    resolution = resolution_for(tolerances.score)
    placebo = Placebo(
        passed=all(s.placebo_equal for s in samples),
        max_abs_delta=quantize(
            max((s.placebo_abs_delta for s in samples), default=0.0), resolution, 0.0, 1.0
        ),
        flips=sum(1 for s in samples if s.placebo_flip),
    )
    if not placebo.passed:
        return Verdict(
            classification=FAILED,
            auditability=auditability,
            placebo=placebo,
            failure="apparatus_fault",
            failure_detail="placebo differed from baseline",
        )
    # 4. effect and label
    try:
        label, effect = effect_of(
            samples,
            tolerance=tolerances.score,
            flip_tolerance=flip_tolerance,
            resolution=resolution,
        )
    except MixedOutcomes:  # numeric and categorical samples: not comparable
        return Verdict(
            classification=FAILED,
            auditability=auditability,
            placebo=placebo,
            failure=VALUE_OUT_OF_RANGE,
            failure_detail="outcome kinds differ",
        )
    # 7. no confident label on a substitute's extrapolation no policy vouches for
    if label != INCONCLUSIVE and unauthorised(answers, authoritative):
        label = INCONCLUSIVE
    # 5. the recorded seed, per-sample rows, served-by
    rows = [[s.seed, *_labels(s), s.flip] for s in samples]
    return Verdict(
        classification=AuditLabel(label),
        auditability=auditability,
        effect=effect,
        placebo=placebo,
        recorded_seed=_recorded_seed(samples, recorded_seed, resolution, recorded_sample),
        sample_rows=rows,
        served_by=served_by,
        substitute_answers=answers,
    )
