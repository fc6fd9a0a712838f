"""Run an agent live, record every crossing, and seal the result as a specimen.

Order of commitments (fail closed, nothing half-written):

1. Check the input file's fields are declared and canonicalisable — before any write.
2. Record the run as RUNNING in the ledger; open the specimen's payload folder.
3. Run the agent through a ``Recorder``; record its outcome.
4. Flush the ciphertext, re-key every field and step digest for this specimen (the
   published form, ``enclave.keys.TenantDigester.published``; ``docs/digests.md``),
   build the manifest, and seal it in ONE ledger transaction.

A crash in 3 or 4 deletes the specimen's payload folder and marks the run INCOMPLETE:
such a run is never eligible for replay.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger import (
    MAX_SAFE_INTEGER,
    AdapterInfo,
    CanonicalizationError,
    LedgerError,
    LedgerPosition,
    SpecimenRecord,
    StepKind,
    canonical_digest,
    canonical_json,
    raise_unchained,
)

from .._errors import AgentFailed, BadInput, EnclaveError, InfrastructureError
from ..keys import TenantDigester
from ..store import validate_id
from ._ambient import observing
from ._auditability import sealed_auditability
from ._code_identity import CodeIdentity, code_identity
from ._recorder import IDENTITY_SIDE, Recorder, SpecError, _Step, iso
from ._registry import reference_of
from ._spec import AgentSpec, Answer, BoundarySpec, FieldPolicy, policy

if TYPE_CHECKING:  # capture is handed an open runtime; it sits below the runtime's layer
    from .._runtime import Runtime

__all__ = ["CaptureResult", "capture", "build_manifest", "source_ref"]

# 2: aliases and resolved identities are declared names or keyed digests, idempotency
# tokens are keyed digests (plaintext in the payload store), and ``code`` is recorded
# 3: field and step digests are keyed per specimen, place and purpose (published form)
MANIFEST_VERSION = 3


@dataclass(frozen=True)
class CaptureResult:
    specimen_id: str
    tenant_id: str
    manifest_digest: str
    position: LedgerPosition
    steps: int
    holes: int


def _code(agent: AgentSpec) -> CodeIdentity:
    return code_identity(agent.name, modules=(agent.function.__module__, *agent.code_modules))


def source_ref(agent: AgentSpec) -> str:
    """Frozen source reference: the agent function's module + its code identity digest
    (the one an audit compares, see ``_code_identity``)."""
    return f"{agent.function.__module__}@{_code(agent).digest or 'unidentified'}"


def _check_inputs(
    agent: AgentSpec, inputs: Mapping[str, Any], overrides: Mapping[str, str]
) -> dict[str, FieldPolicy]:
    declared = dict(agent.inputs)
    for name, value in overrides.items():
        if name not in declared:
            raise BadInput("classification override names an undeclared input field")
        try:
            declared[name] = policy(value, declared[name].retention.value)
        except ValueError:
            raise BadInput(
                "unknown classification (use public, internal, confidential or restricted)"
            ) from None
    if set(inputs) - set(declared):
        raise BadInput("input has fields the agent does not declare")
    try:
        canonical_json(dict(inputs))
    except CanonicalizationError:
        raise BadInput("input holds a value that cannot be canonicalised (RFC 8785)") from None
    return declared


_DIGEST = re.compile(r"hmac-sha256:[0-9a-f]{64}")


def declared_names(agent: AgentSpec) -> frozenset[str]:
    """Every alias and identity the agent declares: the recorder keeps these in clear."""
    names = {n for b in agent.boundaries for n in (*b.aliases, *b.identities)}
    names.update(alt for point in agent.revisions.values() for alt in point.alternatives)
    return frozenset(names)


def published_steps(
    steps: list[_Step], digester: TenantDigester, specimen_id: str, *, declared: frozenset[str]
) -> list[_Step]:
    """The steps with every digest in the published form: keyed to this specimen, the
    digest's place and its purpose, so the ledger shows no equality across specimens or
    across places (``docs/digests.md``). Field digests ("field"), each step's
    request/response digest ("step") and run-time identities the recorder digested —
    an undeclared alias or resolved identity, an answer's own valid time, an effect's
    idempotency token ("identity"); a declared name stays as it is."""

    def publish(digest: str, call_id: str, side: str, path: str, purpose: str) -> str:
        return digester.published(
            digest, specimen_id=specimen_id, locator=(call_id, side, path), purpose=purpose
        )

    def identity(value: str, call_id: str, name: str) -> str:
        if value in declared or not _DIGEST.fullmatch(value):
            return value  # a declared name in clear, or the observed time
        return publish(value, call_id, IDENTITY_SIDE, "/" + name, "identity")

    out = []
    for step in steps:
        r = step.record
        effect = r.effect
        if effect is not None:
            token = identity(effect.idempotency_token, r.call_id, "idempotency_token")
            effect = dataclasses.replace(effect, idempotency_token=token)
        record = r._replace(
            alias=None if r.alias is None else identity(r.alias, r.call_id, "alias"),
            resolved=None if r.resolved is None else identity(r.resolved, r.call_id, "resolved"),
            valid_time=identity(r.valid_time, r.call_id, "valid_time"),
            request_digest=publish(r.request_digest, r.call_id, "request", "", "step"),
            response_digest=publish(r.response_digest, r.call_id, "response", "", "step"),
            effect=effect,
        )
        fields = [
            # a withheld field has no digest: nothing to key
            f
            if f.keyed_digest is None
            else f._replace(
                keyed_digest=publish(f.keyed_digest, r.call_id, f.side, f.path, "field")
            )
            for f in step.fields
        ]
        out.append(_Step(record, fields))
    return out


def build_manifest(
    *,
    specimen_id: str,
    tenant_id: str,
    agent: AgentSpec,
    adapter: AdapterInfo,
    seed: int,
    recorder: Recorder,
) -> dict[str, Any]:
    steps = []
    for step in recorder.steps:
        r = step.record
        steps.append(
            {
                "seq": r.seq,
                "agent": r.agent,
                "call_id": r.call_id,
                "kind": r.kind.value,
                "name": r.name,
                "alias": r.alias,
                "resolved": r.resolved,
                "schema": {"id": r.schema_id, "version": r.schema_version},
                "request_digest": r.request_digest,
                "response_digest": r.response_digest,
                "valid_time": r.valid_time,
                "observed_time": r.observed_time,
                "effect": None
                if r.effect is None
                else {
                    "idempotency_token": r.effect.idempotency_token,
                    "token_expires_at": r.effect.token_expires_at,
                    "live_state_fields": list(r.effect.live_state_fields),
                },
                "fields": [
                    {
                        "side": f.side,
                        "path": f.path,
                        "classification": f.classification.value,
                        "retention": f.retention.value,
                        "digest": f.keyed_digest,
                        "live_state": f.live_state,
                    }
                    for f in step.fields
                ],
            }
        )
    return {
        "manifest_version": MANIFEST_VERSION,
        "specimen_id": specimen_id,
        "tenant_id": tenant_id,
        # "ref": where replay imports the agent from when its name is no entry point
        "agent": {"name": agent.name, "version": agent.version, "ref": reference_of(agent)},
        "adapter": {
            "name": adapter.name,
            "version": adapter.version,
            "strategies": list(adapter.strategies),
            "source_ref": adapter.source_ref,
            "revisions": {k: list(v.alternatives) for k, v in agent.revisions.items()},
        },
        "runtime": {"python": f"{sys.version_info.major}.{sys.version_info.minor}"},
        # the agent's module files and interpreter: an audit refuses if they changed
        "code": _code(agent).to_dict(),
        "seed": seed,
        "retention_class": agent.retention_class,
        "score_bounds": list(agent.score_bounds) if agent.score_bounds else None,
        # how far the specimen can be audited (``_auditability``): named cuts and calls
        "auditability": sealed_auditability(agent, (s.record for s in recorder.steps)),
        "steps": steps,
    }


def capture(
    runtime: Runtime,
    agent: AgentSpec,
    inputs: Mapping[str, Any],
    *,
    tenant_id: str,
    seed: int,
    classification: Mapping[str, str] | None = None,
    durable: bool = False,
    specimen_id: str | None = None,
) -> CaptureResult:
    """Run ``agent`` live on ``inputs``, record every boundary crossing, and seal the
    run as a specimen: payloads encrypted under a fresh data key, keyed digests and
    identities in the ledger. Ends sealed or leaves an incomplete run and nothing else.

    ``seed`` seeds the run's random stream (``ctx.random()``); ``classification``
    raises or lowers input fields' declared classes; ``durable`` flushes each payload
    frame before the next step. Bad input raises ``BadInput`` before anything is
    written; a crashing agent raises ``AgentCrashed`` (its type only, never its text)::

        sealed = enclave.capture(runtime, AGENT, {"ticket": "T-1"}, tenant_id="acme", seed=7)
        sealed.specimen_id
    """
    # 1. everything about the input is checked before anything is written
    validate_id(tenant_id, what="tenant id")
    if isinstance(seed, bool) or not isinstance(seed, int) or abs(seed) > MAX_SAFE_INTEGER:
        # the seed is part of the manifest: it must canonicalise, so check it before any write
        raise BadInput(f"seed must be an integer within +/-{MAX_SAFE_INTEGER}")
    input_policy = _check_inputs(agent, inputs, classification or {})
    _code(agent)  # the code identity is taken before the agent runs (cached per process)
    specimen_id = specimen_id or f"sp-{secrets.token_hex(8)}"
    validate_id(specimen_id, what="specimen id")

    runtime.payloads.hold()  # refused while the home's payloads move: before any write

    # 2. the run exists from here on: it ends sealed or incomplete
    ledger, clock = runtime.ledger, runtime.clock
    try:
        ledger.ensure_tenant(tenant_id)
        ledger.begin_run(
            run_id=specimen_id,
            tenant_id=tenant_id,
            agent_name=agent.name,
            agent_version=agent.version,
            started_at=iso(clock()),
        )
    except LedgerError as exc:
        raise InfrastructureError("the ledger refused the run") from exc
    writer = None
    try:
        data_key, wrapped = runtime.keys.new_data_key(tenant_id, specimen_id)
        writer = runtime.payloads.open_writer(
            tenant_id, specimen_id, wrapped=wrapped, data_key=data_key, durable=durable
        )
        del data_key
        digester = runtime.digests.for_tenant(tenant_id)
        recorder = Recorder(
            tenant_id=tenant_id,
            digester=digester,
            writer=writer,
            clock=clock,
            seed=seed,
            agent=agent,
        )
        # 3. the run itself
        input_spec = BoundarySpec(
            kind=StepKind.INPUT, name="inputs", request={}, response=input_policy
        )
        outcome_spec = BoundarySpec(
            kind=StepKind.OUTCOME, name="outcome", request={}, response=agent.outcome
        )
        recorder.declare(input_spec)
        recorder.declare(outcome_spec)
        recorder.record(input_spec, {}, Answer(response=dict(inputs)), alias=None)
        with observing(recorder):  # ambient reads outside ctx are recorded too
            outcome = agent.run(recorder, dict(inputs))
        recorder.record(outcome_spec, {}, Answer(response=outcome), alias=None)
        _check_score(agent, outcome)
        writer.close()
        # 4. seal: from here on the steps carry only the digests the ledger may keep
        recorder.steps = published_steps(
            recorder.steps, digester, specimen_id, declared=declared_names(agent)
        )
        adapter = AdapterInfo(
            name=agent.name,
            version=agent.version,
            strategies=tuple(agent.strategies),
            source_ref=source_ref(agent),
        )
        manifest = build_manifest(
            specimen_id=specimen_id,
            tenant_id=tenant_id,
            agent=agent,
            adapter=adapter,
            seed=seed,
            recorder=recorder,
        )
        fields = tuple(f for step in recorder.steps for f in step.fields)
        record = SpecimenRecord(
            specimen_id=specimen_id,
            tenant_id=tenant_id,
            agent_name=agent.name,
            agent_version=agent.version,
            manifest=manifest,
            manifest_digest=canonical_digest(manifest),
            adapter=adapter,
            highest_classification=max((f.classification for f in fields), key=lambda c: c.rank),
            retention_class=agent.retention_class,
            sealed_at=iso(clock()),
            steps=tuple(step.record for step in recorder.steps),
            fields=fields,
        )
        position = ledger.seal_specimen(record)
    except BaseException as exc:
        if writer is not None:
            writer.discard()
        try:
            ledger.mark_incomplete(
                specimen_id, failure_code=_failure_code(exc), ended_at=iso(clock())
            )
        except LedgerError:
            pass  # the run stays RUNNING, which is equally ineligible for replay
        if isinstance(exc, LedgerError):
            raise_unchained(InfrastructureError("the ledger refused the specimen"))
        if not isinstance(exc, Exception):
            raise
        # raised while agent code handled an exception of its own, an error would refer
        # to that one, whose message may hold payload content
        if isinstance(exc, EnclaveError):
            raise_unchained(exc)
        # the agent crashed: its message may hold payload content, so name the type only
        raise_unchained(AgentCrashed(type(exc).__name__))
    holes = sum(1 for f in fields if f.retention.value == "withheld")
    return CaptureResult(
        specimen_id, tenant_id, record.manifest_digest, position, len(recorder.steps), holes
    )


class AgentCrashed(AgentFailed):
    """The agent raised during capture; only the exception's type is named."""

    code = "agent_crashed"

    def __init__(self, kind: str) -> None:
        super().__init__(f"the agent crashed ({kind}); the run is recorded as incomplete")


# the codes a capture failure may leave in the ledger: agent code can raise an
# ``EnclaveError`` subclass with any ``code``, so anything else is "agent_crashed"
_FAILURE_CODES = frozenset(
    {"bad_input", "infrastructure", "decryption_failed", "grant_refused", "refused"}
)


def _failure_code(exc: BaseException) -> str:
    if isinstance(exc, SpecError):
        return "spec_violation"
    if isinstance(exc, EnclaveError) and isinstance(exc.code, str) and exc.code in _FAILURE_CODES:
        return exc.code
    return "agent_crashed"


def _check_score(agent: AgentSpec, outcome: Mapping[str, Any]) -> None:
    if agent.score_bounds is None:
        # a categorical agent compares decisions alone; a score nobody bounded would
        # reach the audit as a layer it cannot compare (a string is never "reproduced")
        if "score" in outcome:
            raise SpecError("the outcome carries a score but the agent declares no score_bounds")
        return
    score = outcome.get("score")
    low, high = agent.score_bounds
    if isinstance(score, bool) or not isinstance(score, int | float) or not low <= score <= high:
        raise SpecError("the outcome score is missing or outside its declared bounds")
