"""Capture-mode context: call the live boundary, classify, digest, encrypt, record.

Per field: canonical bytes (RFC 8785) -> keyed digest (HMAC, tenant secret) ->
AES-256-GCM under the specimen's data key, unless the field is digest-only or withheld.
A step's request/response digest is the keyed digest of its field-digest map, so a
withheld field contributes only the fact that it was withheld.

Identities are not a side channel (see ``_spec``): given its ``AgentSpec``, the recorder
refuses a boundary or agent scope the spec does not declare; an alias or resolved
identity the boundary does not declare, every idempotency token and an answer's own valid
time are recorded as keyed digests, their plaintext sealed with the step's fields under
the side ``identity`` (erased with them; the replay reads it back). An effect token's
expiry stays in clear (auditability is decided from it before any audit), in whole
seconds.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ledger import (
    CanonicalizationError,
    EffectInfo,
    FieldRecord,
    Retention,
    StepKind,
    StepRecord,
    canonical_json,
)

from .._errors import BadInput
from ..keys import TenantDigester
from ..store import SpecimenWriter
from ._ambient import AMBIENT_SPECS, suspended, unobserved
from ._context import ENV, READ, AsyncLiveCall, Compute, Context, LiveCall, cut_spec
from ._payload_codec import decode_payload, encode_payload
from ._spec import AgentSpec, Answer, BoundarySpec, DeclaredField, policy

__all__ = ["Recorder", "SpecError"]

_CLOCK = BoundarySpec(
    kind=StepKind.CLOCK, name="clock", request={}, response={"time": policy("internal")}
)
_RANDOM = BoundarySpec(  # one step per stream: request {} (the run's) or {"stream": name}
    kind=StepKind.RANDOM,
    name="random",
    request={"stream": policy("internal")},
    response={"seed": policy("internal")},
)

_ABSENT: Any = object()  # a declared field the step did not carry (None is a value)
IDENTITY_SIDE = "identity"  # payload-store side of run-time identities (alias, token...)
_BUILT_IN = {(s.kind, s.name): s for s in (_CLOCK, _RANDOM, ENV, READ, *AMBIENT_SPECS)}


class SpecError(BadInput):
    """An agent sent or received a field its boundary spec does not declare."""


def iso(moment: datetime) -> str:
    if moment.tzinfo is not UTC:  # naive (local) or another zone: convert first
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


class _Step(NamedTuple):
    record: StepRecord
    fields: list[FieldRecord]


class Recorder(Context):
    def __init__(
        self,
        *,
        tenant_id: str,
        digester: TenantDigester,
        writer: SpecimenWriter,
        clock: Any,
        seed: int,
        agent: AgentSpec | None = None,
    ) -> None:
        super().__init__()
        self._tenant = tenant_id
        self._digester = digester
        self._writer = writer
        self._clock = clock
        self._seed = seed
        self.steps: list[_Step] = []
        self._now: datetime | None = None
        # bound once: these run for every field of every step
        self._digest = digester.digest
        self._ref = writer.ref
        # what may appear in clear: None = any boundary (a bare recorder, no AgentSpec)
        self._boundaries: dict[tuple[StepKind, str], BoundarySpec] | None = None
        self._scopes = frozenset({"main"})
        self._aliases: dict[str, frozenset[str]] = {}
        self._identities: dict[str, frozenset[str]] = {}
        self._cuts: tuple[str, ...] | None = None  # declared cuts, in order (None: any)
        self._cuts_reached: list[str] = []
        self._computing = False
        # ambient reads recorded so far: (step name, canonical request) -> response
        self._ambient: dict[tuple[str, bytes], dict[str, Any]] = {}
        if agent is not None:
            self.credentials = agent.credentials
            self._cuts = agent.cuts
            self._boundaries = {(b.kind, b.name): b for b in agent.boundaries}
            self._boundaries.update(_BUILT_IN)
            self._scopes = frozenset({"main", *agent.scopes})
            for b in agent.boundaries:
                self._aliases[b.name] = frozenset(b.aliases)
                revisions = (
                    p.alternatives for p in agent.revisions.values() if p.call_name == b.name
                )
                self._identities[b.name] = frozenset(b.identities).union(*revisions)

    def declare(self, spec: BoundarySpec) -> None:
        """Admit one more boundary the caller built from static declarations (the run's
        inputs and outcome)."""
        if self._boundaries is not None:
            self._boundaries[spec.kind, spec.name] = spec

    # -- recording --------------------------------------------------------------------
    def _fields(
        self,
        seq: int,
        side: str,
        values: Mapping[str, Any],
        declared: tuple[DeclaredField, ...],
        records: list[FieldRecord],
        sealed: list[tuple[str, str, bytes]],
    ) -> str:
        """Append the side's field records and plaintexts to seal; return its digest."""
        if type(values) is not dict and not isinstance(values, Mapping):  # dict: no ABC check
            raise SpecError(f"step {seq}: {side} must be an object")
        entries = []
        present = 0
        for item in declared:
            value = values.get(item.name, _ABSENT)
            if value is _ABSENT:
                continue
            present += 1
            rule = item.rule
            if rule.retention is Retention.WITHHELD:
                digest, ref = None, None
                entries.append(item.map_key + 'withheld"')
            else:
                try:
                    canon = canonical_json(value)
                except CanonicalizationError:
                    raise SpecError(f"step {seq}: a {side} field cannot be canonicalised") from None
                digest = self._digest(canon)
                entries.append(item.map_key + digest + '"')
                ref = None
                if rule.retention is Retention.ENCRYPTED:
                    ref = self._ref
                    # sealed as produced (float stays float, key order kept); the
                    # canonical bytes are for the digest only
                    sealed.append((side, item.path, encode_payload(value)))
            # positional: this runs for every field of every step
            records.append(
                FieldRecord(
                    seq,
                    side,
                    item.path,
                    rule.classification,
                    rule.retention,
                    digest,
                    ref,
                    rule.live_state,
                )
            )
        if present != len(values):
            raise SpecError(f"step {seq}: {side} has {len(values) - present} undeclared field(s)")
        # digests are ASCII and the entries are in key order: this is the RFC 8785 form
        return self._digest(("{" + ",".join(entries) + "}").encode())

    def record(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        answer: Answer,
        *,
        alias: str | None,
        call_id: str | None = None,
    ) -> None:
        self._record(
            spec,
            request,
            answer.response,
            alias=alias,
            call_id=call_id,
            resolved=answer.resolved,
            valid_time=answer.valid_time,
            token=answer.idempotency_token,
            token_expires_at=answer.token_expires_at,
        )

    @unobserved  # the recorder's own work is not the agent's ambient reads
    def _record(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        response: Mapping[str, Any],
        *,
        alias: str | None,
        call_id: str | None = None,
        resolved: str | None = None,
        valid_time: datetime | None = None,
        token: str | None = None,
        token_expires_at: datetime | None = None,
    ) -> None:
        seq = len(self.steps)
        if self._boundaries is not None and spec.kind is not StepKind.CUT:  # cuts: ``cut``
            declared = self._boundaries.get((spec.kind, spec.name))
            if declared is not spec and declared != spec:
                raise SpecError(f"step {seq}: the boundary is not one the agent declares")
        if self.agent not in self._scopes:
            raise SpecError(f"step {seq}: the agent scope is not one the agent declares")
        fields: list[FieldRecord] = []
        sealed: list[tuple[str, str, bytes]] = []
        # declared names stay in clear; anything else (a non-string too) is sealed or refused
        if alias is not None and (
            type(alias) is not str or alias not in self._aliases.get(spec.name, ())
        ):
            alias = self._identity(seq, "alias", alias, sealed)
        if resolved is not None and (
            type(resolved) is not str or resolved not in self._identities.get(spec.name, ())
        ):
            resolved = self._identity(seq, "resolved", resolved, sealed)
        request_digest = self._fields(seq, "request", request, spec.request_fields, fields, sealed)
        response_digest = self._fields(
            seq, "response", response, spec.response_fields, fields, sealed
        )
        observed_text = iso(self._clock())
        valid_text = observed_text  # an answer's own valid time is run-time: sealed, keyed
        if valid_time is not None:
            valid_text = self._identity(seq, "valid_time", iso(valid_time), sealed)
        effect = None
        if spec.side_effecting:
            if not token:
                raise SpecError(f"step {seq}: an effect must return an idempotency token")
            effect = EffectInfo(
                idempotency_token=self._identity(seq, "idempotency_token", token, sealed),
                # whole seconds, rounded down (an expiry only ever comes sooner): the
                # sub-second digits would be a channel and decide nothing
                token_expires_at=(
                    iso(token_expires_at.replace(microsecond=0)) if token_expires_at else None
                ),
                reverifiable=True,
                live_state_fields=spec.live_state_fields,
            )
        record = StepRecord(  # positional, like the field records: every step builds one
            seq,
            self.agent,
            call_id or self._next_call_id(spec.name),  # a boundary call's: its start's
            spec.kind,
            spec.name,
            alias,  # declared, or a keyed digest
            resolved,  # declared, or a keyed digest
            spec.schema_id,
            spec.schema_version,
            request_digest,
            response_digest,
            valid_text,  # the observed time, or the keyed digest of the answer's own
            observed_text,  # observed time
            effect,
        )
        self._writer.add_step(seq, sealed)
        self.steps.append(_Step(record, fields))

    def _identity(
        self, seq: int, name: str, value: Any, sealed: list[tuple[str, str, bytes]]
    ) -> str:
        """Seal a run-time identity with the step; the ledger gets its keyed digest."""
        if not isinstance(value, str):
            raise SpecError(f"step {seq}: an alias, identity or token must be a string")
        try:
            canon = canonical_json(value)
        except CanonicalizationError:
            raise SpecError(f"step {seq}: an identity cannot be canonicalised") from None
        sealed.append((IDENTITY_SIDE, "/" + name, encode_payload(value)))
        return self._digest(b"identity/" + name.encode() + b":" + canon)

    # -- Context ----------------------------------------------------------------------
    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        call_id = self._next_call_id(spec.name)  # at its start: see ``_next_call_id``
        try:
            # what the live boundary reads (its variables, files, clock, jitter, ids) is
            # the boundary's, recorded as its answer, not the run's
            with suspended():
                result = live(request)
        except BaseException:
            self._release_call_id(call_id)
            raise
        return self._answered(spec, request, result, alias, call_id)

    async def acall(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: AsyncLiveCall | LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        call_id = self._next_call_id(spec.name)
        try:
            with suspended():  # per task: concurrent tasks are still observed
                result = live(request)
                if inspect.isawaitable(result):
                    result = await result
        except BaseException:
            self._release_call_id(call_id)
            raise
        # recorded when the answer arrives: the step order is the order a replay serves in
        return self._answered(spec, request, result, alias, call_id)

    def _answered(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        result: Answer | Mapping[str, Any],
        alias: str | None,
        call_id: str,
    ) -> dict[str, Any]:
        if isinstance(result, Answer):
            self.record(spec, request, result, alias=alias, call_id=call_id)
            return dict(result.response)
        self._record(spec, request, result, alias=alias, call_id=call_id)
        return dict(result)

    def ambient(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        live: Callable[[], Mapping[str, Any]],
    ) -> Mapping[str, Any]:
        answer = dict(live())  # read every time: a credential's value is never kept
        try:
            key = (spec.name, canonical_json(dict(request)))
        except CanonicalizationError:
            raise SpecError(
                f"step {len(self.steps)}: an ambient read has no canonical form"
            ) from None
        recorded = self._ambient.get(key)
        if recorded is None:  # the first read decides: the replay serves that one
            self._record(spec, request, answer, alias=None)
            recorded = self._ambient[key] = answer
        return dict(recorded)

    def cut(self, name: str, compute: Compute) -> Any:
        seq = len(self.steps)
        if type(name) is not str or not name:
            raise ValueError("a cut is named by a non-empty string")
        if name in self._cuts_reached:
            raise SpecError(f"step {seq}: a cut is reached once per run")
        if self._cuts is not None:
            if name not in self._cuts:
                raise SpecError(f"step {seq}: the cut is not one the agent declares")
            last = self._cuts.index(self._cuts_reached[-1]) if self._cuts_reached else -1
            if self._cuts.index(name) < last:
                raise SpecError(f"step {seq}: the cut is reached out of its declared order")
        if self._computing:
            raise SpecError(f"step {seq}: a cut inside another cut's work is refused")
        self._cuts_reached.append(name)
        self._computing = True
        try:
            state = compute()
        finally:
            self._computing = False
        try:
            # the state as replay will see it: JSON's types (a tuple comes back a list)
            state = decode_payload(encode_payload(state))
        except CanonicalizationError:
            raise SpecError(f"step {len(self.steps)}: the cut state has no JSON form") from None
        self._record(cut_spec(name), {}, {"state": state}, alias=None)
        return state

    def now(self) -> datetime:
        if self._now is None:
            self._now = self._clock()
            self.record(_CLOCK, {}, Answer(response={"time": iso(self._now)}), alias=None)
        return self._now

    def random(self, stream: str | None = None) -> random.Random:
        def open_step(request: dict[str, Any]) -> None:
            self.record(_RANDOM, request, Answer(response={"seed": self._seed}), alias=None)

        return self._stream(stream, self._seed, open_step)
