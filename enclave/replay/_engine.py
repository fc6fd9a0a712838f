"""The replay engine: re-run an agent with ``ctx`` serving the record, never live.

Invariants:

1. ``live`` callables are never called. Every call is served from the record, from the
   boundary's declared deterministic substitute, or not at all (``Unservable``).
2. Before the *departure point* (the intervened call, or the first draw of randomness
   when the sample's seed differs from the recorded one) calls are matched by position,
   kind, name, call id and canonical request; any mismatch is a ``DivergenceError``.
3. After it, a call whose (agent, name, request) matches an unconsumed recording is
   served from the record; otherwise a substitute serves it, or the branch is unservable.
4. Time is the recorded time; randomness is ``Random(seed)`` for the run's seed.
5. Reads of live-state response fields after departure, effects whose idempotency token
   can no longer be re-verified, and effects not served from the record are reported:
   they decide the auditability class.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from ledger import CanonicalizationError, StepKind, canonical_json

from .._errors import EnclaveError
from ..capture import AgentSpec, BoundarySpec, Context, LiveCall
from ._errors import (
    AGENT_ERROR,
    RUN_FAILURES,
    BranchError,
    DivergenceError,
    Unresolvable,
    Unservable,
)
from ._model import RecordedStep, RunResult, Trajectory, is_hole, layers_of

__all__ = ["ReplayContext", "replay_run"]

_NON_CALLS = {StepKind.INPUT.value, StepKind.OUTCOME.value}


def _canon(value: Mapping[str, Any]) -> bytes:
    try:
        return canonical_json(dict(value))
    except CanonicalizationError:
        raise DivergenceError("a request cannot be canonicalised") from None


class TrackedResponse(dict[str, Any]):
    """A served response that notices reads of live-state fields and of holes.

    Every ordinary way of reading a value counts as a read: indexing, ``get``, ``pop``,
    ``setdefault``, and the wholesale ones — ``items()``, ``values()``, ``copy()``,
    ``dict(r)``, ``{**r}``, ``r | other``, equality, ``repr``/``str``, pickling and
    ``json.dumps`` — which read every field. (Overriding ``__iter__`` makes CPython's
    dict merge go through ``__getitem__``; a copy can no longer launder a live-state
    field or a withheld one.)
    """

    def __init__(self, data: Mapping[str, Any], *, on_read: Callable[[str], None]) -> None:
        super().__init__(data)
        self._on_read = on_read

    def _read_all(self) -> None:
        for key in dict.keys(self):
            self._on_read(key)

    def __getitem__(self, key: str) -> Any:
        self._on_read(key)
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.keys(self))

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return default

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._on_read(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, Any]:
        item = super().popitem()
        self._on_read(item[0])
        return item

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return super().setdefault(key, default)

    def items(self) -> Any:
        self._read_all()
        return super().items()

    def values(self) -> Any:
        self._read_all()
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._read_all()
        return dict(super().items())

    def __eq__(self, other: object) -> bool:
        self._read_all()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self._read_all()
        return super().__ne__(other)

    __hash__ = None

    def __or__(self, other: Any) -> Any:
        self._read_all()
        return dict(super().items()) | other

    def __ror__(self, other: Any) -> Any:
        self._read_all()
        return other | dict(super().items())

    def __repr__(self) -> str:
        self._read_all()
        return super().__repr__()

    __str__ = __repr__


class ReplayContext(Context):
    def __init__(
        self,
        *,
        trajectory: Trajectory,
        seed: int,
        audit_time: datetime,
    ) -> None:
        super().__init__()
        self._calls = [s for s in trajectory.steps if s.kind not in _NON_CALLS]
        self._seed = seed
        self._recorded_seed = trajectory.seed
        self._audit_time = audit_time
        self._cursor = 0
        self._consumed: set[int] = set()
        self.departed = False
        self.live_state_reads: list[tuple[str, str]] = []
        self.unverifiable: list[str] = []
        self.unserved_effects: list[str] = []
        self.served: list[tuple[str, str]] = []
        # (kind, response) of every served call, in order: the outcome's layers
        self.answers: list[tuple[str, dict[str, Any]]] = []
        self._time: datetime | None = None

    # -- matching -------------------------------------------------------------------
    def _expect(
        self, kind: str, name: str, call_id: str, request: Mapping[str, Any]
    ) -> RecordedStep:
        if self._cursor >= len(self._calls):
            raise DivergenceError("the replay made more calls than the record holds")
        step = self._calls[self._cursor]
        if (step.kind, step.name, step.call_id) != (kind, name, call_id):
            raise DivergenceError(f"call {self._cursor} differs from the record")
        if not _same_request(step.request, request):
            raise DivergenceError(f"call {self._cursor} ({call_id}) sent a different request")
        self._consumed.add(step.seq)
        self._cursor += 1
        return step

    def _find_after_departure(
        self, kind: str, name: str, request: Mapping[str, Any]
    ) -> RecordedStep | None:
        for step in self._calls:
            if step.seq in self._consumed or step.kind != kind or step.name != name:
                continue
            if step.agent == self._agent and _same_request(step.request, request):
                self._consumed.add(step.seq)
                return step
        return None

    def _track(self, step: RecordedStep) -> Callable[[str], None]:
        live = set(step.live_state)

        def on_read(field: str) -> None:
            value = step.response.get(field)  # the recorded mapping, not the tracked one
            if is_hole(value):
                raise Unresolvable("the run needs a field that was withheld at capture")
            if field in live and self.departed:
                read = (step.call_id, "/" + field)
                if read not in self.live_state_reads:
                    self.live_state_reads.append(read)

        return on_read

    def _serve_recorded(self, step: RecordedStep, how: str) -> Mapping[str, Any]:
        if step.side_effecting:
            if (
                step.token_expires_at is not None
                and datetime.fromisoformat(step.token_expires_at.replace("Z", "+00:00"))
                <= self._audit_time
            ) and step.call_id not in self.unverifiable:
                self.unverifiable.append(step.call_id)
        self.served.append((step.call_id, how))
        return TrackedResponse(step.response, on_read=self._track(step))

    def _substitute(
        self, spec: BoundarySpec, request: Mapping[str, Any], resolved: str | None, call_id: str
    ) -> Mapping[str, Any]:
        if spec.substitute is None:
            if spec.side_effecting and call_id not in self.unserved_effects:
                self.unserved_effects.append(call_id)
            raise Unservable(f"{call_id} has no recording and no declared substitute")
        self.served.append((call_id, "substitute"))
        return dict(spec.substitute(dict(request), resolved))

    # -- Context --------------------------------------------------------------------
    def call(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        del live  # never called: replay does not go live
        response = self._serve(spec, request)
        # dict.items: recording what was served is not a read by the agent
        served = dict(dict.items(response)) if isinstance(response, dict) else dict(response)
        self.answers.append((spec.kind.value, served))
        return response

    def _serve(self, spec: BoundarySpec, request: Mapping[str, Any]) -> Mapping[str, Any]:
        call_id = self._next_call_id(spec.name)
        kind = spec.kind.value
        if not self.departed:
            step = self._expect(kind, spec.name, call_id, request)
            if step.intervened:
                self.departed = True
                if step.serve_by_substitute:
                    return self._substitute(spec, request, step.resolved, call_id)
                return self._serve_recorded(step, "intervention")
            return self._serve_recorded(step, "record")
        found = self._find_after_departure(kind, spec.name, request)
        if found is not None:
            return self._serve_recorded(found, "record")
        resolved = next((s.resolved for s in self._calls if s.name == spec.name), None)
        return self._substitute(spec, request, resolved, call_id)

    def now(self) -> datetime:
        if self._time is None:
            step = self._clock_step()
            self._time = datetime.fromisoformat(str(step.response["time"]).replace("Z", "+00:00"))
        return self._time

    def _clock_step(self) -> RecordedStep:
        if not self.departed:
            return self._expect(StepKind.CLOCK.value, "clock", self._next_call_id("clock"), {})
        found = self._find_after_departure(StepKind.CLOCK.value, "clock", {})
        if found is None:
            raise Unservable("the replay asked for a time the record does not hold")
        return found

    def random(self) -> random.Random:
        call_id = self._next_call_id("random")
        if not self.departed:
            self._expect(StepKind.RANDOM.value, "random", call_id, {})
            if self._seed != self._recorded_seed:
                self.departed = True  # a sample seed is a declared change of its own
        return random.Random(self._seed)  # noqa: S311 - replayable jitter, not crypto


def _same_request(recorded: Mapping[str, Any], request: Mapping[str, Any]) -> bool:
    if set(recorded) != set(request):
        return False
    for value in recorded.values():
        if is_hole(value):
            raise Unresolvable("matching needs a request field that was withheld at capture")
    return _canon(recorded) == _canon(request)


def replay_run(
    *,
    trajectory: Trajectory,
    agent: AgentSpec,
    seed: int,
    variant: str,
    audit_time: datetime,
) -> RunResult:
    """Replay once. Branch failures become a ``RunResult`` with ``failure`` set to a
    code from ``RUN_FAILURES``: anything else the agent raises — whatever its class, code
    or text — is ``agent_error``. ``failure_detail`` stays in the worker."""
    ctx = ReplayContext(trajectory=trajectory, seed=seed, audit_time=audit_time)
    try:
        outcome = agent.function(ctx, dict(trajectory.inputs))
        if not isinstance(outcome, Mapping):
            raise BranchError("the agent returned no outcome object")
        layers = layers_of(outcome, ctx.answers)
        failure, detail = None, None
    except EnclaveError as exc:
        code = getattr(type(exc), "code", None)
        closed = code if type(code) is str and code in RUN_FAILURES else AGENT_ERROR
        layers, failure, detail = None, closed, type(exc).__name__
    except MemoryError:
        raise  # a broken memory limit contaminates the worker; it is not an agent error
    except Exception as exc:  # noqa: BLE001 - agent code may raise anything; report the type only
        layers, failure, detail = None, AGENT_ERROR, type(exc).__name__
    return RunResult(
        seed=seed,
        variant=variant,
        failure=failure,
        failure_detail=detail,
        layers=layers,
        live_state_reads=tuple(ctx.live_state_reads),
        unverifiable_effects=tuple(ctx.unverifiable),
        unserved_effects=tuple(ctx.unserved_effects),
        served=tuple(ctx.served),
    )
