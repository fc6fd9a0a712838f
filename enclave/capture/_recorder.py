"""Capture-mode context: call the live boundary, classify, digest, encrypt, record.

Per field: canonical bytes (RFC 8785) -> keyed digest (HMAC, tenant secret) ->
AES-256-GCM under the specimen's data key, unless the field is digest-only or withheld.
A step's request/response digest is the keyed digest of its field-digest map, so a
withheld field contributes only the fact that it was withheld.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

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
from ._context import Context, LiveCall
from ._spec import Answer, BoundarySpec, FieldPolicy, policy

__all__ = ["Recorder", "SpecError"]

_CLOCK = BoundarySpec(
    kind=StepKind.CLOCK, name="clock", request={}, response={"time": policy("internal")}
)
_RANDOM = BoundarySpec(
    kind=StepKind.RANDOM, name="random", request={}, response={"seed": policy("internal")}
)


class SpecError(BadInput):
    """An agent sent or received a field its boundary spec does not declare."""


def iso(moment: datetime) -> str:
    if moment.tzinfo is not UTC:  # naive (local) or another zone: convert first
        moment = moment.astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass
class _Step:
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

    # -- recording --------------------------------------------------------------------
    def _fields(
        self, seq: int, side: str, values: Mapping[str, Any], declared: Mapping[str, FieldPolicy]
    ) -> tuple[list[FieldRecord], list[tuple[str, str, bytes]], bytes]:
        """Field records, the plaintexts to seal, and the canonical field-digest map."""
        if not isinstance(values, Mapping):
            raise SpecError(f"step {seq}: {side} must be an object")
        undeclared = values.keys() - declared.keys()
        if undeclared:
            raise SpecError(f"step {seq}: {side} has {len(undeclared)} undeclared field(s)")
        records: list[FieldRecord] = []
        sealed: list[tuple[str, str, bytes]] = []
        digest_map: dict[str, str] = {}
        ascii_names = True
        for name in sorted(values):
            ascii_names = ascii_names and name.isascii()
            rule, path = declared[name], "/" + name
            if rule.retention is Retention.WITHHELD:
                digest, ref = None, None
                digest_map[path] = "withheld"
            else:
                try:
                    canon = canonical_json(values[name])
                except CanonicalizationError:
                    raise SpecError(f"step {seq}: a {side} field cannot be canonicalised") from None
                digest = self._digest(canon)
                digest_map[path] = digest
                ref = None
                if rule.retention is Retention.ENCRYPTED:
                    ref = self._ref
                    sealed.append((side, path, canon))
            records.append(
                FieldRecord(
                    seq=seq,
                    side=side,
                    path=path,
                    classification=rule.classification,
                    retention=rule.retention,
                    keyed_digest=digest,
                    payload_ref=ref,
                    live_state=rule.live_state,
                )
            )
        if ascii_names:
            # ASCII keys and ASCII digest strings: orjson's sorted output *is* the RFC 8785
            # form (canonical_json's own fast path), without re-walking the map
            return records, sealed, orjson.dumps(digest_map, option=orjson.OPT_SORT_KEYS)
        return records, sealed, canonical_json(digest_map)

    def record(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        answer: Answer,
        *,
        alias: str | None,
        call_id: str | None = None,
    ) -> None:
        seq = len(self.steps)
        req_fields, req_sealed, req_map = self._fields(seq, "request", request, spec.request)
        resp_fields, resp_sealed, resp_map = self._fields(
            seq, "response", answer.response, spec.response
        )
        observed_text = iso(self._clock())
        effect = None
        if spec.side_effecting:
            if not answer.idempotency_token:
                raise SpecError(f"step {seq}: an effect must return an idempotency token")
            effect = EffectInfo(
                idempotency_token=answer.idempotency_token,
                token_expires_at=iso(answer.token_expires_at) if answer.token_expires_at else None,
                reverifiable=True,
                live_state_fields=spec.live_state_fields,
            )
        record = StepRecord(
            seq=seq,
            agent=self._agent,
            call_id=call_id or self._next_call_id(spec.name),
            kind=spec.kind,
            name=spec.name,
            alias=alias,
            resolved=answer.resolved,
            schema_id=spec.schema_id,
            schema_version=spec.schema_version,
            request_digest=self._digest(req_map),
            response_digest=self._digest(resp_map),
            valid_time=observed_text if answer.valid_time is None else iso(answer.valid_time),
            observed_time=observed_text,
            effect=effect,
        )
        self._writer.add_step(seq, req_sealed + resp_sealed)
        self.steps.append(_Step(record, req_fields + resp_fields))

    # -- Context ----------------------------------------------------------------------
    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        result = live(request)
        answer = result if isinstance(result, Answer) else Answer(response=result)
        self.record(spec, request, answer, alias=alias)
        return dict(answer.response)

    def now(self) -> datetime:
        if self._now is None:
            self._now = self._clock()
            self.record(_CLOCK, {}, Answer(response={"time": iso(self._now)}), alias=None)
        return self._now

    def random(self) -> random.Random:
        self.record(_RANDOM, {}, Answer(response={"seed": self._seed}), alias=None)
        return random.Random(self._seed)  # noqa: S311 - replayable jitter, not crypto
