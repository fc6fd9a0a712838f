"""The three stages of an audit, each runnable as its own durable job.

1. ``prepare_audit``: open the specimen (its own single-use grant), apply the
   intervention and prove it changed only what it declares, run the baseline gate on
   the recorded seed in an isolated worker.
2. ``run_sample_batch``: for each assigned seed, the baseline, intervened and placebo
   runs in one isolated worker (again its own grant), reduced to ``SampleSummary``.
3. ``finalize_audit``: check the batches cover exactly seeds S..S+N-1 once each,
   decide, sign the certificate and append it — or append ``audit.failed``.

Stages exchange only the metadata objects of ``_results``; plaintext lives inside a
stage's process for the duration of its grant and is never stored. Every worker reply is
parsed by ``_reply`` against the specimen's own vocabulary before anything of it is
kept; a refused reply fails the audit with the refusal's code (``worker_reply_invalid``,
``value_out_of_range``), never with anything the worker said.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ledger import CanonicalizationError

from .._errors import Refused
from .._runtime import Runtime
from ..capture import AgentSpec, load_agent, recorded_reference
from ..sandbox import Contaminated, Sandbox, SandboxLimits, WorkerHandle
from ._broker import InferenceBroker
from ._candidate import CandidateCode
from ._certificates import RuntimeLedgerLookup, issue_certificate
from ._compare import compare_layers, recorded_layers
from ._cuts import check_from_cut, cut_summary
from ._disclosure import VocabularySize, disclosure_bound
from ._errors import ModelDrift, ReplyInvalid, ReplyRefused, ValueOutOfRange
from ._frameworks import worker_preload
from ._inference_stage import governed, inference_broker, reasked_baseline, stage_usage
from ._interventions import (
    AppliedIntervention,
    apply_code_revision,
    apply_intervention,
    placebo_of,
)
from ._load import OpenedSpecimen, open_specimen
from ._model import RunResult, Trajectory
from ._outcome import AuditOutcome, Preparation
from ._predicate import build_predicate, publish_digests
from ._reply import FAILURE_REASONS, Vocabulary, parse_loaded, parse_runs, parse_samples
from ._request import PER_SAMPLE, AuditRequest
from ._results import BatchResult, SampleSummary, seeds_of
from ._shards import in_parallel, locked, split_seeds
from ._verdict import BASELINE_NOT_REPRODUCED, FAILED, Verdict, auditability_of, decide
from .worker import substitute_calls

__all__ = [
    "finalize_audit",
    "prepare_audit",
    "repeat_seeds",
    "run_sample_batch",
    "WORKER_HANDLER",
]

WORKER_HANDLER = "enclave.replay.worker._entry:handle"
# Our own modules, imported before the tripwire arms; agent modules load after it.
WORKER_PRELOAD = ("enclave.replay.worker._entry",)
# Share of a batch replayed on a second fresh worker (see repeat_seeds): one sample in
# twenty costs a worker start and 5% more runs, and a dependence on the worker process
# that shows on every seed (an address, a start time) is caught by any one of them.
REPEAT_FRACTION = 0.05
UNSTABLE = "unstable"  # a sample differed on the second worker
# Paired samples per worker call: progress granularity, bounded replies, and well inside
# the per-call wall clock now that each of a sample's three runs is a process of its own.
BATCH_SEEDS = 50
CONTAMINATED = "the replay worker was contaminated"
DIFFERED = "a sample came out otherwise on a second fresh worker"
REFUSED = "the replay worker's reply was refused"
DRIFTED = "the inference endpoint answered with another model identity"
_REFUSALS = frozenset({ReplyInvalid.code, ValueOutOfRange.code})


def _open(
    runtime: Runtime, request: AuditRequest, *, job_id: str, now: datetime, lease_seconds: int
) -> tuple[OpenedSpecimen, AppliedIntervention, Trajectory]:
    opened = open_specimen(
        runtime,
        request.specimen_id,
        job_id=job_id,
        lease_seconds=lease_seconds,
        now=now,
        code_revision=request.code_revision,  # refused code_changed unless declared
    )
    runtime.ledger.append(
        "grant.used",
        job_id,
        {
            "job_id": job_id,
            "specimen_id": request.specimen_id,
            "provider": opened.grant_provider,
            "accessor": opened.grant_accessor,
        },
    )
    agent = _load_agent(recorded_reference(opened.record.manifest["agent"]))
    if agent.name != opened.record.agent_name:
        raise Refused("the agent could not be loaded", code="agent_unusable")
    digester = runtime.digests.for_tenant(opened.record.tenant_id)
    if request.candidate is not None:
        # the captured code passed check_code above; the candidate is never imported
        # here, only its files are hashed again: the code that runs is the declared code
        request.candidate.verify()
        code_revision = apply_code_revision(
            opened.trajectory,
            captured=str(opened.record.manifest["code"]["digest"]),
            candidate=request.candidate.digest,
            digester=digester,
        )
        published = publish_digests(
            request.specimen_id, request.intervention, code_revision, digester
        )
        return opened, published, opened.trajectory
    applied = publish_digests(
        request.specimen_id,
        request.intervention,
        apply_intervention(opened.trajectory, request.intervention, agent=agent, digester=digester),
        digester,
    )
    if request.from_cut is not None:  # before any worker starts: one-line BadInput
        check_from_cut(applied.trajectory, request.from_cut)
    return opened, applied, placebo_of(opened.trajectory, applied)


def _preload(opened: OpenedSpecimen) -> tuple[str, ...]:
    """What the worker's template imports: the worker and the agent's frameworks."""
    agent = _load_agent(recorded_reference(opened.record.manifest["agent"]))  # imported already
    return worker_preload(WORKER_PRELOAD, agent)


def _load_agent(name: str) -> AgentSpec:
    """The agent's declaration, for the intervention proof. Importing its module runs its
    code here: whatever that raises — any class, code or text — is one closed refusal."""
    try:
        return load_agent(name)
    except Exception:  # noqa: BLE001 - agent module code may raise anything, BadInput too
        raise Refused("the agent could not be loaded", code="agent_unusable") from None


def stage_sandbox(
    runtime: Runtime,
    isolation: str,
    limits: SandboxLimits | None,
    candidate: CandidateCode | None = None,
) -> Sandbox:
    scratch = runtime.home.root / "scratch"
    code: tuple[tuple[str, str], ...] = ()
    if candidate is not None:  # workers see a copy of the declared code, not its root
        code = ((candidate.snapshot(scratch / "candidates"), candidate.code_path),)
    return Sandbox(scratch_root=scratch, limits=limits, isolation=isolation, code=code)


def _candidate_wire(candidate: CandidateCode | None) -> dict[str, Any]:
    """What the worker needs of a candidate: where to import it from, in its arm only."""
    if candidate is None:
        return {}
    return {"candidate": {"target": candidate.target, "root": candidate.root}}


def _load_worker(
    worker: WorkerHandle,
    opened: OpenedSpecimen,
    applied: AppliedIntervention,
    placebo: Trajectory,
    now: datetime,
    score_tolerance: float,
    candidate: CandidateCode | None = None,
    from_cut: str | None = None,
    inference: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """Load the job into the worker; returns each declared substitute's fidelity."""
    reply = worker.call(
        {
            "op": "load",
            "agent": recorded_reference(opened.record.manifest["agent"]),
            "trajectories": {
                "baseline": opened.trajectory.to_dict(),
                "intervened": applied.trajectory.to_dict(),
                "placebo": placebo.to_dict(),
            },
            "audit_time": now.isoformat(),
            "score_tolerance": score_tolerance,
            **_candidate_wire(candidate),
            **({"from_cut": from_cut} if from_cut is not None else {}),
            **({"inference": list(inference)} if inference else {}),
        }
    )
    if candidate is not None:
        reply = _declared_code_seen(reply, candidate)
    agent = _load_agent(recorded_reference(opened.record.manifest["agent"]))  # imported already
    return parse_loaded(reply, substitute_calls(agent, opened.trajectory))


def _declared_code_seen(reply: Any, candidate: CandidateCode) -> dict[str, Any]:
    """The load reply without the candidate's digest as the worker's view showed it,
    which must be the declared digest: a candidate replaced after it was verified here
    (or a view bound before that) would run code the certificate does not name."""
    if type(reply) is not dict or type(reply.get("candidate")) is not str:
        raise ReplyInvalid()
    rest = dict(reply)
    candidate.require(rest.pop("candidate"))
    return rest


def _grant(opened: OpenedSpecimen, lease_seconds: int) -> dict[str, Any]:
    return {
        "provider": opened.grant_provider,
        "accessor": opened.grant_accessor,
        "ttl_seconds": lease_seconds,
    }


def prepare_audit(
    runtime: Runtime,
    request: AuditRequest,
    *,
    audit_id: str,
    now: datetime,
    isolation: str = "auto",
    limits: SandboxLimits | None = None,
    lease_seconds: int = 300,
) -> Preparation:
    opened, applied, placebo = _open(
        runtime, request, job_id=audit_id, now=now, lease_seconds=lease_seconds
    )
    sandbox = stage_sandbox(runtime, isolation, limits, request.candidate)
    vocabulary = Vocabulary.of(opened.trajectory)
    gate: RunResult | None = None
    own: SampleSummary | None = None
    fidelity: dict[str, dict[str, Any]] | None = None
    failure: tuple[str, str] | None = None
    seed = opened.trajectory.seed
    broker = inference_broker(runtime, request, opened, audit_id=audit_id, seeds=[seed])
    on_ask = None if broker is None else broker.answer
    reasked: RunResult | None = None
    try:
        with sandbox.start(WORKER_HANDLER, preload=_preload(opened)) as worker:
            fidelity = _load_worker(
                worker,
                opened,
                applied,
                placebo,
                now,
                request.tolerances.score,
                request.candidate,
                request.from_cut,
                governed(request),
            )
            reply = worker.call({"op": "run", "runs": [{"variant": "baseline", "seed": seed}]})
            gate = parse_runs(reply, [("baseline", seed)], vocabulary)[0]
            if gate.failure is None and broker is not None:  # the provider, as recorded?
                reask = {"variant": "baseline", "seed": seed, "reask": True}
                reply = worker.call({"op": "run", "runs": [reask]}, on_ask=on_ask)
                reasked = parse_runs(reply, [("baseline", seed)], vocabulary)[0]
            if gate.failure is None:  # the recorded seed's counterfactual, reported apart
                reply = worker.call({"op": "samples", "seeds": [seed]}, on_ask=on_ask)
                own = parse_samples(reply, [seed], vocabulary)[0]
    except Contaminated as exc:
        failure = (exc.reason, CONTAMINATED)
    except ReplyRefused as exc:
        failure = (exc.code, REFUSED)
    except ModelDrift:
        failure = (ModelDrift.code, DRIFTED)
    finally:
        if broker is not None:  # an endpoint's failure propagates: its client closed
            broker.close()
    usage = stage_usage(runtime, broker, audit_id=audit_id, job_id=audit_id, stage="preparation")
    if failure is None and reasked is not None and reasked.failure is not None:
        failure = (reasked.failure, "the baseline re-asked of the model on the recorded seed")
    baseline = None
    if gate is not None and gate.failure is not None:
        failure = (gate.failure, "baseline run on the recorded seed")
    elif gate is not None and gate.layers is not None:
        try:
            layers = compare_layers(
                recorded_layers(opened.trajectory.steps), gate.layers, request.tolerances
            )
        except CanonicalizationError:  # e.g. a lone surrogate: not comparable exactly
            failure = (ValueOutOfRange.code, REFUSED)
        else:
            baseline = {"reproduced": all(v["ok"] for v in layers.values()), "layers": layers}
            if reasked is not None and reasked.layers is not None and baseline["reproduced"]:
                baseline = reasked_baseline(opened.trajectory, reasked, request, layers)
    gate_facts = (
        []
        if gate is None
        else [
            SampleSummary(
                seed=gate.seed,
                unverifiable_effects=gate.unverifiable_effects,
                unserved_effects=gate.unserved_effects,
            )
        ]
    )
    return Preparation(
        audit_id=audit_id,
        specimen_id=request.specimen_id,
        tenant_id=opened.record.tenant_id,
        agent_name=opened.record.agent_name,
        manifest_digest=opened.record.manifest_digest,
        target_call_id=applied.target_call_id,
        declared_changes=applied.declared_changes,
        actual_changes=applied.actual_changes,
        unchanged_digest_before=applied.unchanged_digest_before,
        unchanged_digest_after=applied.unchanged_digest_after,
        original_digest=applied.original_digest,
        counterfactual_digest=applied.counterfactual_digest,
        baseline=baseline,
        gate_auditability=auditability_of(gate_facts),
        environment=sandbox.environment,
        grant=_grant(opened, lease_seconds),
        failure=None if failure is None else failure[0],
        failure_detail=None if failure is None else failure[1],
        vocabulary=VocabularySize.of(vocabulary).to_dict(),
        recorded_seed=seed,
        substitute_fidelity=fidelity,
        recorded_sample=None if own is None else own.to_dict(),
        cut=None if request.from_cut is None else cut_summary(opened.trajectory, request.from_cut),
        inference=usage,
    )


def repeat_seeds(seeds: Sequence[int]) -> list[int]:
    """The seeds a batch replays again on a second fresh worker: ``REPEAT_FRACTION`` of
    them, at least one, evenly spaced over the batch (the first always among them), so
    the choice depends on the audit's seeds only."""
    if not seeds:
        return []
    count = max(1, math.ceil(REPEAT_FRACTION * len(seeds)))
    return [int(seeds[i * len(seeds) // count]) for i in range(count)]


def run_sample_batch(
    runtime: Runtime,
    request: AuditRequest,
    *,
    audit_id: str,
    job_id: str,
    seeds: Sequence[int],
    now: datetime,
    isolation: str = "auto",
    limits: SandboxLimits | None = None,
    lease_seconds: int = 300,
    progress: Any = None,
    shards: int | None = 1,
) -> BatchResult:
    """Replay ``seeds`` in isolated workers (every run a fresh process): ``shards`` of
    them at once on contiguous shares of the seeds (``None``: one per core; ``_shards``),
    then :func:`repeat_seeds` of them on another fresh worker: a sample that comes out
    otherwise there depends on something that differs between worker processes, and
    the batch fails ``unstable`` rather than report it."""
    opened, applied, placebo = _open(
        runtime, request, job_id=job_id, now=now, lease_seconds=lease_seconds
    )
    vocabulary = Vocabulary.of(opened.trajectory)
    failure: str | None = None
    broker = inference_broker(runtime, request, opened, audit_id=audit_id, seeds=seeds, batch=True)
    try:
        tolerance = request.tolerances.score
        advance = locked(progress)
        # one sandbox for the whole batch: no two of its workers come from one zygote
        # (``enclave.sandbox._zygote``, invariant 4), so the repeat worker is another
        # process image than the worker whose seeds it repeats, as a fresh start is
        sandbox = stage_sandbox(runtime, isolation, limits, request.candidate)

        def replayed(part: list[int], report: Any) -> Any:
            return functools.partial(
                _sample_worker,
                sandbox,
                opened,
                applied,
                placebo,
                now,
                part,
                vocabulary,
                tolerance,
                report,
                candidate=request.candidate,
                from_cut=request.from_cut,
                broker=broker,
            )

        # the shards and the repeat worker at once; one after another when a broker
        # counts asks (one ask at a time) or the batch is not split (a durable job: its
        # workers come from this thread's zygotes, and jobs run a thread each)
        at_once = broker is None and shards != 1
        parts = split_seeds(seeds, shards if at_once else 1)
        tasks = [replayed(p, advance) for p in parts]
        tasks.append(replayed(repeat_seeds(seeds), None))
        if at_once:
            sandbox.warm(WORKER_HANDLER, preload=_preload(opened), count=len(tasks))
        *done, repeated = in_parallel(tasks, at_once=at_once)
        samples = [sample for part in done for sample in part]
    except (Contaminated, ReplyRefused) as exc:
        failure = exc.reason if isinstance(exc, Contaminated) else exc.code
    except ModelDrift:
        failure = ModelDrift.code
    else:
        by_seed = {s.seed: s for s in samples}
        if any(by_seed.get(s.seed) != s for s in repeated):
            failure = UNSTABLE
    finally:
        if broker is not None:  # an endpoint's failure propagates: its client closed
            broker.close()
    return BatchResult(
        job_id=job_id,
        seeds=tuple(seeds),
        samples=() if failure else tuple(samples),
        grant=_grant(opened, lease_seconds),
        failure=failure,
        inference=stage_usage(runtime, broker, audit_id=audit_id, job_id=job_id, stage="samples"),
    )


def _sample_worker(
    sandbox: Sandbox,
    opened: OpenedSpecimen,
    applied: AppliedIntervention,
    placebo: Trajectory,
    now: datetime,
    seeds: Sequence[int],
    vocabulary: Vocabulary,
    tolerance: float,
    progress: Any = None,
    *,
    candidate: CandidateCode | None = None,
    from_cut: str | None = None,
    broker: InferenceBroker | None = None,
) -> list[SampleSummary]:
    """``seeds``' paired samples from one fresh worker."""
    samples: list[SampleSummary] = []
    names = () if broker is None else broker.boundaries
    on_ask = None if broker is None else broker.answer
    with sandbox.start(WORKER_HANDLER, preload=_preload(opened)) as worker:
        _load_worker(worker, opened, applied, placebo, now, tolerance, candidate, from_cut, names)
        for start in range(0, len(seeds), BATCH_SEEDS):
            chunk = [int(s) for s in seeds[start : start + BATCH_SEEDS]]
            reply = worker.call({"op": "samples", "seeds": chunk}, on_ask=on_ask)
            samples.extend(parse_samples(reply, chunk, vocabulary))
            if progress:
                progress(len(chunk))
    return samples


def finalize_audit(
    runtime: Runtime,
    request: AuditRequest,
    *,
    audit_id: str,
    preparation: Preparation,
    batches: Sequence[BatchResult],
    now: datetime,
) -> AuditOutcome:
    ledger = runtime.ledger
    expected = list(range(request.seed, request.seed + request.samples))
    verdict: Verdict
    gate = preparation.gate_auditability
    if preparation.failure is not None:
        verdict = Verdict(
            classification=FAILED,
            auditability=gate,
            failure=preparation.failure,
            failure_detail=preparation.failure_detail,
        )
    elif not preparation.gate_passed:
        verdict = Verdict(classification=BASELINE_NOT_REPRODUCED, auditability=gate)
    elif (bad := next((b for b in batches if b.failure), None)) is not None:
        verdict = Verdict(
            classification=FAILED,
            auditability=gate,
            failure=bad.failure,
            failure_detail=_batch_failure_detail(str(bad.failure)),
        )
    elif sorted(seeds_of(batches)) != expected or [
        s.seed for b in batches for s in b.samples
    ] != seeds_of(batches):
        # lineage: every sample exactly once, from the batch that was assigned its seed
        verdict = Verdict(
            classification=FAILED,
            auditability=gate,
            failure="lineage_mismatch",
            failure_detail="the batches do not cover the requested seeds exactly once",
        )
    else:
        ordered = sorted((s for b in batches for s in b.samples), key=lambda s: s.seed)
        verdict = decide(
            samples=ordered,
            tolerances=request.tolerances,
            recorded_seed=preparation.recorded_seed,
            recorded_sample=None
            if preparation.recorded_sample is None
            else SampleSummary.from_dict(preparation.recorded_sample),
            authoritative=request.authoritative_substitutes,
        )
    if verdict.failure is not None and verdict.failure not in FAILURE_REASONS:
        # defence in depth: a stored stage result is not a channel for other codes either
        verdict = Verdict(
            classification=FAILED,
            auditability=verdict.auditability,
            failure=ReplyInvalid.code,
            failure_detail=REFUSED,
        )
    if verdict.classification == FAILED:
        position = ledger.append(
            "audit.failed",
            audit_id,
            {"audit_id": audit_id, "reason": verdict.failure, "detail": verdict.failure_detail},
        )
        return AuditOutcome(
            audit_id=audit_id,
            specimen_id=request.specimen_id,
            classification=FAILED,
            auditability=verdict.auditability,
            placebo=verdict.placebo,
            failure=verdict.failure,
            failure_detail=verdict.failure_detail,
            ledger_index=position.index,
        )
    specimen_entry = RuntimeLedgerLookup(ledger).specimen_position(request.specimen_id)
    if specimen_entry is None:
        raise Refused("no sealed specimen has that id", code="unknown_specimen")
    digester = runtime.digests.for_tenant(preparation.tenant_id)
    bound = disclosure_bound(
        samples=request.samples,
        tolerance=request.tolerances.score,
        vocabulary=_vocabulary_size(runtime, request, preparation),
        inference=request.inference,
        per_sample=request.detail == PER_SAMPLE,
    )
    predicate = build_predicate(
        request=request,
        preparation=preparation,
        verdict=verdict,
        batches=batches,
        digester=digester,
        specimen_entry=specimen_entry,
        disclosure=bound,
        now=now,
    )
    envelope, path, index = issue_certificate(
        runtime,
        audit_id=audit_id,
        specimen_id=request.specimen_id,
        manifest_digest=preparation.manifest_digest,
        predicate=predicate,
    )
    return AuditOutcome(
        audit_id=audit_id,
        specimen_id=request.specimen_id,
        classification=verdict.classification,
        auditability=verdict.auditability,
        effect=verdict.effect,
        placebo=verdict.placebo,
        certificate_path=path,
        ledger_index=index,
        envelope=envelope,
        disclosure=bound.to_dict(),
    )


def _batch_failure_detail(reason: str) -> str:
    if reason == UNSTABLE:
        return DIFFERED
    if reason == ModelDrift.code:
        return DRIFTED
    return REFUSED if reason in _REFUSALS else CONTAMINATED


def _vocabulary_size(
    runtime: Runtime, request: AuditRequest, preparation: Preparation
) -> VocabularySize:
    if preparation.vocabulary is not None:
        return VocabularySize.from_dict(preparation.vocabulary)
    # a preparation stored before vocabulary sizes were: the manifest's, at the caps
    return VocabularySize.of_manifest(runtime.ledger.get_specimen(request.specimen_id).manifest)
