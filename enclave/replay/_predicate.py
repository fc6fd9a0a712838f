"""The certificate predicate (v3): what an audit establishes, and what it does not.

Built with every count, then stated tight (``ledger.certificates.tight_predicate``).

Beyond v1 it carries the three-way label and how sure it is (equivalence interval,
minimum detectable effects, which layers changed), the recorded seed's own
counterfactual and how each call was served (``docs/certificate-v2.md``). It is tight
(``docs/certificate-v3.md``): counts an agent could fill with content of its choosing
leave as ``none``, ``some`` or ``all`` of the samples, there are no per-sample rows or
histogram, and a layer's changed fields are a count.

The boundaries whose substitutes answered requests the record does not hold are named in
``not_established`` with the number of samples where any did (``substitute_answers``):
what the live service would have answered there is not established, whether or not a
policy declares that substitute authoritative.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ledger.certificates import tight_predicate
from ledger.certificates.statistics import EQUIVALENT, INCONCLUSIVE, INFLUENTIAL

from ..keys import TenantDigester
from ._disclosure import DisclosureBound
from ._inference_stage import inference_section
from ._intervention import Intervention
from ._interventions import AppliedIntervention
from ._outcome import Preparation
from ._request import PER_SAMPLE, AuditRequest, published_target_digest
from ._results import BatchResult
from ._verdict import BASELINE_NOT_REPRODUCED, OBSERVABLE_ONLY, Verdict

__all__ = ["build_predicate"]

_NOT_ESTABLISHED = [
    "generalisation beyond this specimen: the result concerns this recorded run only",
    "the identity of provider-internal components behind a resolved model or service",
    "what live systems would answer today: every dependency was served from the record",
]


def isolation_layers(environment: dict[str, Any]) -> list[str]:
    """The isolation's name, then the layers the supervisor checked were in force.

    Only ``layers_in_force`` counts (see ``enclave.sandbox._checks``): an unchecked
    worker claims no layer, and diagnostics such as the audit hook are never layers.
    """
    layers = [str(environment.get("isolation", "none"))]
    checked = environment.get("layers_in_force")
    if environment.get("verified") is True and isinstance(checked, list):
        layers += [str(name) for name in checked if name != "audit_hook"]
    return layers


_MAX_NAMED = 2  # boundary names spelt out in one sentence (each at most 128 characters)


def _named(boundaries: Sequence[str]) -> str:
    shown = ", ".join(f"'{b}'" for b in boundaries[:_MAX_NAMED])
    more = len(boundaries) - _MAX_NAMED
    return shown if more <= 0 else f"{shown} and {more} more (see substitute_answers)"


def _extrapolations(
    answers: dict[str, Any] | None, authoritative: Collection[str], samples: int
) -> list[str]:
    """The boundaries whose substitutes answered requests the record does not hold."""
    if not answers or not answers["boundaries"]:
        return []
    boundaries = list(answers["boundaries"])
    head = (
        f"what boundary {_named(boundaries)} would answer live to requests the record does "
        f"not hold: its declared substitute answered them (in {answers['samples']} of "
        f"{samples} samples)"
    )
    unchecked = [b for b in boundaries if b not in authoritative]
    if not unchecked:
        return [head + ", and the request's policy declares it authoritative"]
    return [
        head + f"; {_named(unchecked)} was checked on recorded requests only: no confident "
        "label rests on it"
    ]


def not_established(
    classification: str,
    substitute_answers: dict[str, Any] | None = None,
    authoritative: Collection[str] = (),
    samples: int = 0,
) -> list[str]:
    items = _extrapolations(substitute_answers, authoritative, samples) + list(_NOT_ESTABLISHED)
    if classification == OBSERVABLE_ONLY:
        items.insert(
            0,
            "whether the intervened input was causal: the branch depends on live state or "
            "unverifiable effects, so no counterfactual conclusion is drawn either way",
        )
    elif classification == BASELINE_NOT_REPRODUCED:
        items.insert(0, "any effect of the intervention: the untouched baseline did not reproduce")
    elif classification == EQUIVALENT:
        items.insert(
            0,
            "absence of any influence: only that the mean score delta lies within the declared "
            "score tolerance and the decision flip rate below the flip tolerance, on these seeds",
        )
    elif classification == INCONCLUSIVE:
        items.insert(
            0,
            "either influence or its absence: the intervals straddle the tolerances, or the "
            "samples are too few (see the minimum detectable effects)",
        )
    elif classification == INFLUENTIAL:
        items.insert(0, "the size of the influence beyond the reported intervals")
    return items


def inference_not_established(inference: dict[str, Any]) -> list[str]:
    """What answers asked of a model during the audit leave open."""
    items = [
        "that the provider served the pinned model revision: the answer's stated model "
        "identity was checked, which the provider could misstate; nothing proves it "
        "cryptographically",
        "how the model answered at capture time to requests the record does not hold: "
        "those answers come from the provider at audit time (each arm's count is under "
        "inference), and are kept in the audit's sealed record so a re-run serves them again",
    ]
    if not inference["seeded"]:
        items.append(
            "independent draws per sample: the provider seed is not varied, so arms that ask "
            "the same request get the same recorded answer, and a sampled model is not "
            "re-sampled per seed"
        )
    return items


def publish_digests(
    specimen_id: str,
    intervention: Intervention,
    applied: AppliedIntervention,
    digester: TenantDigester,
) -> AppliedIntervention:
    """``applied`` with its internal digests in the form that leaves the enclave, each
    keyed to the specimen, the target and its purpose (``docs/digests.md``): the original
    value as a "field" (equal to the specimen view's digest of a top-level target field),
    the counterfactual, and the two unchanged-rest digests under one key so that their
    equality stays visible. Done as soon as the intervention is applied, so no job row,
    preview or certificate ever holds an internal (per-tenant) digest."""

    def publish(digest: str, purpose: str) -> str:
        return published_target_digest(
            digester,
            digest,
            specimen_id=specimen_id,
            intervention=intervention,
            call_id=applied.target_call_id,
            purpose=purpose,
        )

    return replace(
        applied,
        original_digest=publish(applied.original_digest, "field"),
        counterfactual_digest=publish(applied.counterfactual_digest, "counterfactual"),
        unchanged_digest_before=publish(applied.unchanged_digest_before, "unchanged"),
        unchanged_digest_after=publish(applied.unchanged_digest_after, "unchanged"),
    )


def lineage(
    request: AuditRequest,
    preparation: Preparation,
    verdict: Verdict,
    batches: Sequence[BatchResult],
) -> list[dict[str, Any]]:
    chain: list[dict[str, Any]] = []
    if request.policy:
        chain.append({"kind": "policy", "id": request.policy[0], "version": request.policy[1]})
    chain += [
        {
            "kind": "intervention",
            "strategy": request.intervention.strategy.value,
            "target": preparation.target_call_id,
            "digest": preparation.counterfactual_digest,
        },
        {
            "kind": "evidence",
            "call_id": preparation.target_call_id,
            "original_digest": preparation.original_digest,
            "counterfactual_digest": preparation.counterfactual_digest,
        },
        {
            "kind": "baseline-gate",
            "job": preparation.audit_id,
            "grant": preparation.grant.get("accessor"),
        },
    ]
    for batch in batches:
        seeds = f"{batch.seeds[0]}..{batch.seeds[-1]}" if batch.seeds else ""
        chain.append(
            {
                "kind": "replays",
                "job": batch.job_id,
                "seeds": seeds,
                "runs": 3 * len(batch.samples),
                "grant": batch.grant.get("accessor"),
            }
        )
    if verdict.effect is not None:
        chain.append(
            {
                "kind": "scores",
                "mean_delta": verdict.effect.mean_delta,
                "flip_rate": verdict.effect.flip_rate,
            }
        )
    chain.append({"kind": "classification", "value": verdict.classification.value})
    return chain


def build_predicate(
    *,
    request: AuditRequest,
    preparation: Preparation,
    verdict: Verdict,
    batches: Sequence[BatchResult],
    digester: TenantDigester,
    specimen_entry: tuple[int, str],
    disclosure: DisclosureBound,
    now: datetime,
) -> dict[str, Any]:
    iv = request.intervention
    ran_samples = any(b.samples for b in batches)
    inference = inference_section(request, preparation.inference, [b.inference for b in batches])
    unestablished = not_established(
        verdict.classification,
        verdict.substitute_answers,
        request.authoritative_substitutes,
        request.samples,
    )
    if inference is not None:
        unestablished[1:1] = inference_not_established(inference)
    full = {
        "request": request.to_predicate(call_id=preparation.target_call_id, digester=digester),
        "baseline": preparation.baseline,
        "intervention": {
            "strategy": iv.strategy.value.upper(),
            "target": {"call_id": preparation.target_call_id, "field": iv.target_label},
            "declared_changes": list(preparation.declared_changes),
            "actual_changes": list(preparation.actual_changes),
            "unchanged_digest_before": preparation.unchanged_digest_before,
            "unchanged_digest_after": preparation.unchanged_digest_after,
            "unchanged_digest_equal": (
                preparation.unchanged_digest_before == preparation.unchanged_digest_after
            ),
        },
        "samples": None
        if not ran_samples
        else {
            "count": request.samples,
            "seed": request.seed,
            "seeds": f"{request.seed}..{request.seed + request.samples - 1}",
        },
        "effect": None if verdict.effect is None else verdict.effect.to_json(),
        "placebo": None if verdict.placebo is None else verdict.placebo.to_json(),
        "recorded_seed": None if verdict.recorded_seed is None else verdict.recorded_seed.to_json(),
        "sample_rows": verdict.sample_rows,
        "served_by": verdict.served_by,
        # optional (certificates issued before it have none)
        **(
            {"substitute_answers": verdict.substitute_answers}
            if verdict.substitute_answers is not None
            else {}
        ),
        "substitute_fidelity": preparation.substitute_fidelity,
        "classification": verdict.classification.value,
        "auditability": verdict.auditability.to_json(),
        "not_established": unestablished,
        "environment": {
            "isolation_layers": isolation_layers(preparation.environment),
            **preparation.environment,
        },
        "lineage": lineage(request, preparation, verdict, batches),
        "grant": dict(preparation.grant),
        "ledger": {
            "specimen_entry_index": specimen_entry[0],
            "specimen_entry_hash": specimen_entry[1],
        },
        "disclosure": disclosure.to_dict(),
        "issued_at": now.isoformat().replace("+00:00", "Z"),
        # optional (certificates of full replays have none): the cut the runs started from
        **({"cut": dict(preparation.cut)} if preparation.cut is not None else {}),
        # optional (audits that authorised no inference have none)
        **({"inference": inference} if inference is not None else {}),
    }
    # every count where the policy granted it (a v2 predicate), else the tight v3 one
    return full if request.detail == PER_SAMPLE else tight_predicate(full)
