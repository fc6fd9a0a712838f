"""The replay engine: re-run an agent with ``ctx`` serving the record, never live.

Invariants:

1. ``live`` callables are never called. Every call is served from the record, from the
   boundary's declared deterministic substitute, or not at all (``Unservable``). A
   boundary named in ``unfaithful`` (its substitute did not reproduce the record, see
   ``_fidelity``) counts as having no substitute.
2. Before the *departure point* (the intervened call, or the first draw of randomness
   when the sample's seed differs from the recorded one) calls are matched by position,
   kind, name, call id and canonical request; any mismatch is a ``DivergenceError``.
3. After it, a call whose (agent, name, request) matches an unconsumed recording is
   matched to it; otherwise a substitute serves it, or the branch is unservable.
4. A matched step is served from its recorded response unless (a) the intervention
   marks it ``serve_by_substitute`` (a revision swap: every call of the revision point,
   before or after departure), or (b) its boundary reads the world effects change and
   the effects recorded before it did not happen in this run exactly as recorded (same
   recorded steps, same requests, same order, none skipped, none extra, none
   substituted). Then the substitute serves it with the step's resolved identity, or the
   branch is unservable (its ``served`` ends with the step, ``unservable``). Reading the
   world is the default, failing closed: every ``READBACK`` boundary reads it, and so
   does one declaring ``reads_world`` or ``reads_after``; ``reads_after`` narrows the
   effects read to those it names; only a boundary declared ``effect_independent`` is
   served from the record whatever the effects (``BoundarySpec.reads_effects``).
5. Time is the recorded time; randomness is one stream per run seeded with the run's
   seed, plus named sub-streams (``Context.random``); each stream creation matches one
   recorded ``random`` step.
6. Reads of live-state response fields after departure, effects whose idempotency token
   can no longer be re-verified, and effects not served from the effect store (served by
   a substitute, or not at all) are reported: they decide the auditability class.
7. ``served`` says how each call was served, in call order (``record``,
   ``intervention``, ``substitute``, ``unservable`` — the last written before the branch
   ends); ``unused`` lists the recorded calls the run never matched; ``extrapolated``
   the boundaries whose substitute answered a request the record does not hold (its
   answer was never checked against anything: ``_fidelity`` checks recorded requests).
   Such a call may carry a recorded call id (the k-th call of a boundary with another
   request), so its serving mark alone does not tell it apart.
8. Cuts (``Context.cut``). A full replay runs a cut's work and, before departure, its
   state must equal the recorded state (else ``DivergenceError``); after departure the
   state is the branch's own. A replay *from* a cut (``from_cut``) serves that cut and
   every cut the run reaches before it from the record without running their work: the
   recorded calls between the cursor and the cut step are ``skipped`` — consumed, never
   executed nor served, left out of ``served`` and ``unused``; their answers still make
   up the outcome's layers, their effects count as met as recorded (invariants 4, 6),
   and a skipped ``clock`` step is the run's time. A skipped ``random`` step is a
   ``DivergenceError``: the request validation (``_cuts``) refuses such a cut first.
9. Ambient reads (``enclave.capture._ambient``: environment variables, data files read
   outside ``ctx``) are not positional calls: each is served by content from the run's
   recorded ambient steps, at any point of the run, the same value every time; the first
   serving of a step is marked ``record``, a recorded one never read is ``unused``. A read
   the record does not hold marks the closed name of its kind (``ambient:env``...)
   ``unservable`` and ends the branch ``ambient_input`` — even if the agent catches the
   error, the run fails.
10. Concurrent calls (``acall`` from tasks of one event loop). At capture a call's id is
   taken when it starts and its step is recorded when its answer arrives. Before
   departure, a replayed ``acall`` claims the first unclaimed recorded call ahead of the
   cursor with its agent scope, boundary and request, takes that call's recorded id and
   waits until the cursor reaches it: the calls of a batch are served in the order their
   answers arrived at capture, so the code after each answer runs in the recorded
   interleaving whatever order the tasks issue them in. A call the record does not hold
   ahead of the cursor, or a wait in which no call is served for ``_PATIENCE`` turns of
   the loop, is a ``DivergenceError``. After departure the counterfactual's world keeps
   the recorded latencies: a call the record holds is claimed by content (invariant 3)
   and, once the batch has settled (``_SETTLE`` idle turns), the waiting call answered
   first at capture is served first; a call the record does not hold is served at once.
   Every arm follows the same rule, so the order alone never tells arms apart.
11. Governed inference. After departure, a call of a boundary in ``governed`` that the
   record does not hold is asked of ``inference`` (in the sandbox: the supervisor, over
   the run's channel, under the audit's inference policy) instead of a substitute; it is
   marked ``inference``. Before departure nothing is asked: every call is the record's —
   except in a run that re-asks (``reask``: the baseline's check that the provider
   still behaves as recorded), where every governed call is asked, the record's answer
   never served, and the run departs at the first: what follows may differ in text.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ledger import CanonicalizationError, StepKind, canonical_json

from ..._errors import EnclaveError
from ...capture import (
    AgentSpec,
    AsyncLiveCall,
    BoundarySpec,
    Compute,
    Context,
    LiveCall,
    decode_payload,
    encode_payload,
    observing,
)
from .._errors import (
    AGENT_ERROR,
    RUN_FAILURES,
    AmbientInputMissing,
    BranchError,
    DivergenceError,
    Unresolvable,
    Unservable,
)
from .._model import RecordedStep, RunResult, Trajectory, is_hole, layers_of
from ._tracked import TrackedResponse

__all__ = ["Inference", "ReplayContext", "replay_run"]

_NON_CALLS = {StepKind.INPUT.value, StepKind.OUTCOME.value}
_AMBIENT = StepKind.AMBIENT.value
_RANDOM = StepKind.RANDOM.value
_CUT = StepKind.CUT.value
# turns of the event loop without a call claimed or served: after departure, the batch
# has settled (every task that will call has called); before or after, a wait this long
# means the call a turn depends on never comes
_SETTLE = 8
_PATIENCE = 10_000
#: asks a governed boundary's answer of the supervisor: (boundary, request) -> answer
Inference = Callable[[str, dict[str, Any]], Mapping[str, Any]]


def _canon(value: Mapping[str, Any]) -> bytes:
    try:
        return canonical_json(dict(value))
    except CanonicalizationError:
        raise DivergenceError("a request cannot be canonicalised") from None


class ReplayContext(Context):
    serves_record = True

    def __init__(
        self,
        *,
        trajectory: Trajectory,
        seed: int,
        audit_time: datetime,
        unfaithful: frozenset[str] = frozenset(),
        departed: bool = False,
        from_cut: str | None = None,
        inference: Inference | None = None,
        governed: frozenset[str] = frozenset(),
        reask: bool = False,
    ) -> None:
        super().__init__()
        self._reask = reask
        self._inference = inference
        self._governed = frozenset(governed) if inference is not None else frozenset()
        self._recorded = [s for s in trajectory.steps if s.kind not in _NON_CALLS]
        self._calls = [s for s in self._recorded if s.kind != _AMBIENT]
        # ambient reads by content (invariant 9): (name, canonical request) -> step
        self._ambient = {
            (s.name, _canon(s.request)): s for s in self._recorded if s.kind == _AMBIENT
        }
        self.ambient_missing = False
        self._seed = seed
        self._recorded_seed = trajectory.seed
        self._audit_time = audit_time
        self._unfaithful = frozenset(unfaithful)
        self._cursor = 0
        self._consumed: set[int] = set()
        self._claimed: set[int] = set()  # recorded calls a waiting concurrent call stands for
        self._progress = 0  # calls claimed or served so far: how a waiting call sees progress
        # effects met so far, in order: (name, recorded seq if served from the record)
        self._effects: list[tuple[str, int | None]] = []
        # a code revision departs before the first call: the code itself is the change
        self.departed = departed
        self.live_state_reads: list[tuple[str, str]] = []
        self.unverifiable: list[str] = []
        self.unserved_effects: list[str] = []
        self.served: list[tuple[str, str]] = []
        self.extrapolated: list[str] = []
        # (kind, response) of every served call, in order: the outcome's layers
        self.answers: list[tuple[str, dict[str, Any]]] = []
        self._time: datetime | None = None
        # serving cuts from the record until the cut named ``from_cut`` is served
        self._from_cut = from_cut
        self._skipping = from_cut is not None
        self.skipped: list[str] = []  # recorded calls inside the skipped work

    @property
    def unused(self) -> tuple[str, ...]:
        """Recorded calls (not input or outcome) this run never matched, in record order."""
        return tuple(s.call_id for s in self._recorded if s.seq not in self._consumed)

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
        self,
        kind: str,
        name: str,
        request: Mapping[str, Any],
        servable: Callable[[RecordedStep], bool] | None = None,
        *,
        consume: bool = True,
    ) -> RecordedStep | None:
        """The first unconsumed, unclaimed recording of this call — the first one
        ``servable`` from the record if any is (a readback taken after the effects this
        run repeated)."""
        found = None
        for step in self._calls:
            if step.seq in self._consumed or step.kind != kind or step.name != name:
                continue
            if step.seq in self._claimed:  # a waiting concurrent call stands for it
                continue
            if step.agent == self.agent and _same_request(step.request, request):
                if servable is None or servable(step):
                    found = step
                    break
                found = found or step
        if found is not None and consume:
            self._consumed.add(found.seq)
        return found

    def _match(
        self,
        kind: str,
        name: str,
        call_id: str,
        request: Mapping[str, Any],
        servable: Callable[[RecordedStep], bool] | None = None,
    ) -> RecordedStep | None:
        """The recorded step this call stands for (consumed), or None after departure."""
        if not self.departed:
            return self._expect(kind, name, call_id, request)
        return self._find_after_departure(kind, name, request, servable)

    def _world_as_recorded(self, spec: BoundarySpec, step: RecordedStep) -> bool:
        """Did every effect this boundary reads (all of them unless ``reads_after``
        narrows them), recorded before ``step``, happen in this run as that very recorded
        step, in the recorded order, and no other? True for a boundary that reads no
        state effects change (``BoundarySpec.reads_effects``)."""
        if not spec.reads_effects:
            return True
        names = set(spec.reads_after)

        def read(name: str) -> bool:
            return not names or name in names

        recorded = [
            s.seq for s in self._calls if s.side_effecting and read(s.name) and s.seq < step.seq
        ]
        met = [seq for name, seq in self._effects if read(name)]
        return met == recorded

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

    def _check_token(self, step: RecordedStep) -> None:
        if (
            step.token_expires_at is not None
            and datetime.fromisoformat(step.token_expires_at.replace("Z", "+00:00"))
            <= self._audit_time
        ) and step.call_id not in self.unverifiable:
            self.unverifiable.append(step.call_id)

    def _serve_recorded(self, step: RecordedStep, how: str) -> Mapping[str, Any]:
        if step.side_effecting:
            self._effects.append((step.name, step.seq))
            self._check_token(step)
        self.served.append((step.call_id, how))
        return TrackedResponse(step.response, on_read=self._track(step))

    def _substitute(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        resolved: str | None,
        call_id: str,
        how: str,
    ) -> Mapping[str, Any]:
        if spec.side_effecting:  # whatever serves it, it is not the effect store
            self._effects.append((spec.name, None))
            if call_id not in self.unserved_effects:
                self.unserved_effects.append(call_id)
        substitute = None if spec.name in self._unfaithful else spec.substitute
        if substitute is None:
            self.served.append((call_id, "unservable"))
            raise Unservable(f"{call_id} cannot be served from the record or a substitute")
        try:
            answer = dict(substitute(dict(request), resolved))
        except BaseException:
            self.served.append((call_id, "unservable"))  # agent code: its error ends the run
            raise
        self.served.append((call_id, how))
        return answer

    def _ask(
        self, spec: BoundarySpec, request: Mapping[str, Any], call_id: str
    ) -> Mapping[str, Any]:
        """Invariant 11: the supervisor's answer to a request the record does not hold."""
        assert self._inference is not None
        try:
            answer: dict[str, Any] = dict(self._inference(spec.name, dict(request)))
        except BaseException:
            self.served.append((call_id, "unservable"))
            raise
        self.served.append((call_id, "inference"))
        return answer

    # -- concurrent calls (invariant 10) ---------------------------------------------
    def _claim(self, spec: BoundarySpec, request: Mapping[str, Any]) -> RecordedStep | None:
        """The recorded call a concurrent call stands for, claimed until it is served:
        before departure the first unclaimed one ahead of the cursor with its agent scope,
        boundary and request; after it, as ``_find_after_departure`` (None: the record
        holds no such call)."""
        kind, agent = spec.kind.value, self.agent
        found = None
        if not self.departed:
            for step in self._calls[self._cursor :]:
                if (
                    step.seq not in self._claimed
                    and (step.kind, step.name, step.agent) == (kind, spec.name, agent)
                    and _same_request(step.request, request)
                ):
                    found = step
                    break
            if found is None:
                raise DivergenceError("a concurrent call is not one the record holds")
        else:
            found = self._find_after_departure(
                kind, spec.name, request, lambda s: self._world_as_recorded(spec, s), consume=False
            )
            if found is None:
                return None
        self._claimed.add(found.seq)
        self._follow_call_id(found.call_id)
        self._progress += 1
        return found

    async def _turn(self, step: RecordedStep) -> None:
        """Wait for the turn of a claimed call: before departure, until every call
        answered before it at capture has been served; after it, until no task of the
        loop has issued or been served a call for ``_SETTLE`` turns and no waiting call
        was answered earlier at capture."""
        idle = 0
        while True:
            if not self.departed:
                if step.seq in self._consumed:  # a positional call took it (a cut's skip)
                    raise DivergenceError(f"{step.call_id} was served to another call")
                if self._calls[self._cursor] is step:  # unconsumed: never behind the cursor
                    return
            elif idle >= _SETTLE and step.seq == min(self._claimed):
                return
            progress = self._progress
            await asyncio.sleep(0)
            idle = 0 if self._progress != progress else idle + 1
            if idle > _PATIENCE:  # every task waits: the call the cursor needs never came
                raise DivergenceError(f"the calls answered before {step.call_id} never came")

    # -- cuts -------------------------------------------------------------------------
    def _skip_to_cut(self, name: str, call_id: str) -> RecordedStep:
        """Consume the recorded calls up to this cut's step without running them."""
        while self._cursor < len(self._calls):
            step = self._calls[self._cursor]
            if (step.kind, step.name, step.call_id) == (_CUT, name, call_id):
                self._consumed.add(step.seq)
                self._cursor += 1
                return step
            self._skip(step)
        raise DivergenceError("the record holds no such cut after this point")

    def _skip(self, step: RecordedStep) -> None:
        if step.kind == _RANDOM:
            raise DivergenceError("randomness drawn before the cut cannot be skipped")
        if step.kind == StepKind.CLOCK.value and self._time is None:
            self._time = datetime.fromisoformat(str(step.response["time"]).replace("Z", "+00:00"))
        if step.side_effecting:  # met as recorded: what the cut state was computed from
            self._effects.append((step.name, step.seq))
            self._check_token(step)
        if step.kind != _CUT:
            self.answers.append((step.kind, dict(step.response)))
        self._follow_call_id(step.call_id)
        self._consumed.add(step.seq)
        self.skipped.append(step.call_id)
        self._cursor += 1

    def cut(self, name: str, compute: Compute) -> Any:
        if type(name) is not str or not name:
            raise ValueError("a cut is named by a non-empty string")
        call_id = self._next_call_id(name)
        if self._skipping:
            step = self._skip_to_cut(name, call_id)
            if name == self._from_cut:
                self._skipping = False
            self.served.append((step.call_id, "record"))
            state = step.response.get("state")
            if is_hole(state):
                raise Unresolvable("the cut's recorded state is not in the record")
            return decode_payload(encode_payload(state))  # a copy the agent may change
        try:
            state = decode_payload(encode_payload(compute()))
        except CanonicalizationError:
            raise DivergenceError("the cut state has no JSON form") from None
        recorded = self._match(_CUT, name, call_id, {})
        if recorded is not None and not self.departed:
            if _canon({"state": state}) != _canon({"state": recorded.response.get("state")}):
                raise DivergenceError(f"the state at cut {call_id} differs from the record")
        return state

    # -- ambient inputs (invariant 9) -----------------------------------------------
    def ambient(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        live: Callable[[], Mapping[str, Any]],
    ) -> Mapping[str, Any]:
        del live  # never called: the sandbox's world is not the recorded one
        step = self._ambient.get((spec.name, _canon(request)))
        if step is None:
            self.ambient_missing = True
            self.served.append((spec.name, "unservable"))
            raise AmbientInputMissing("the run read an input outside ctx the record does not hold")
        if step.seq not in self._consumed:
            self._consumed.add(step.seq)
            self.served.append((step.call_id, "record"))
        for value in step.response.values():
            if is_hole(value):
                raise Unresolvable("the run needs an ambient input withheld at capture")
        return dict(step.response)

    def holds(self, spec: BoundarySpec, request: Mapping[str, Any]) -> bool:
        return (spec.name, _canon(request)) in self._ambient

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
        return self._answer(spec, self._serve(spec, request))

    async def acall(
        self,
        spec: BoundarySpec,
        request: Mapping[str, Any],
        *,
        live: AsyncLiveCall | LiveCall,
        alias: str | None = None,
    ) -> Mapping[str, Any]:
        del live  # never called: replay does not go live
        step = self._claim(spec, request)
        if step is None:  # after departure, a call the record does not hold: no turn to wait
            return self._answer(spec, self._serve(spec, request))
        try:
            await self._turn(step)
        finally:
            self._claimed.discard(step.seq)
        return self._answer(spec, self._serve(spec, request, step))

    def _answer(self, spec: BoundarySpec, response: Mapping[str, Any]) -> Mapping[str, Any]:
        # dict.items: recording what was served is not a read by the agent
        served = dict(dict.items(response)) if isinstance(response, dict) else dict(response)
        self.answers.append((spec.kind.value, served))
        self._progress += 1
        return response

    def _serve(
        self, spec: BoundarySpec, request: Mapping[str, Any], claimed: RecordedStep | None = None
    ) -> Mapping[str, Any]:
        call_id = claimed.call_id if claimed else self._next_call_id(spec.name)
        if claimed is not None and self.departed:
            self._consumed.add(claimed.seq)
            step: RecordedStep | None = claimed
        else:  # before departure a claimed call is the cursor's: matched as any call
            step = self._match(
                spec.kind.value,
                spec.name,
                call_id,
                request,
                lambda s: self._world_as_recorded(spec, s),
            )
        if spec.name in self._governed and (step is None or self._reask):
            if step is not None:  # re-asked: from here on, matched by content
                self.departed = True
            return self._ask(spec, request, call_id if step is None else step.call_id)
        if step is None:  # after departure, a call the record does not hold
            resolved = next((s.resolved for s in self._calls if s.name == spec.name), None)
            answer = self._substitute(spec, request, resolved, call_id, "substitute")
            if spec.name not in self.extrapolated:
                self.extrapolated.append(spec.name)
            return answer
        how = "intervention" if step.intervened else "record"
        if step.intervened:
            self.departed = True
        if step.serve_by_substitute:
            return self._substitute(spec, request, step.resolved, step.call_id, how)
        if not self._world_as_recorded(spec, step):
            # the recorded answer depends on effects this run did not repeat exactly
            return self._substitute(spec, request, step.resolved, step.call_id, "substitute")
        return self._serve_recorded(step, how)

    def now(self) -> datetime:
        if self._time is None:
            call_id = self._next_call_id("clock")
            step = self._match(StepKind.CLOCK.value, "clock", call_id, {})
            if step is None:
                self.served.append((call_id, "unservable"))
                raise Unservable("the replay asked for a time the record does not hold")
            self.served.append((step.call_id, "record"))
            self._time = datetime.fromisoformat(str(step.response["time"]).replace("Z", "+00:00"))
        return self._time

    def random(self, stream: str | None = None) -> random.Random:
        return self._stream(stream, self._seed, self._open_stream)

    def _open_stream(self, request: dict[str, Any]) -> None:
        call_id = self._next_call_id("random")
        was_departed = self.departed
        step = self._match(_RANDOM, "random", call_id, request)
        if not was_departed and self._seed != self._recorded_seed:
            self.departed = True  # a sample seed is a declared change of its own
        # a stream the record does not hold is still seeded deterministically from the run
        self.served.append((call_id, "substitute") if step is None else (step.call_id, "record"))


def _same_request(recorded: Mapping[str, Any], request: Mapping[str, Any]) -> bool:
    if set(recorded) != set(request):
        return False
    for value in recorded.values():
        if is_hole(value):
            raise Unresolvable("matching needs a request field that was withheld at capture")
    return _canon(recorded) == _canon(request)


def _abstention(exc: BaseException) -> str | None:
    """The closed failure of the enclave's own error among ``exc``'s causes, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen:
        code = getattr(type(current), "code", None)
        if isinstance(current, EnclaveError) and type(code) is str and code in RUN_FAILURES:
            return code
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def replay_run(
    *,
    trajectory: Trajectory,
    agent: AgentSpec,
    seed: int,
    variant: str,
    audit_time: datetime,
    unfaithful: frozenset[str] = frozenset(),
    departed: bool = False,
    from_cut: str | None = None,
    inference: Inference | None = None,
    governed: frozenset[str] = frozenset(),
    reask: bool = False,
) -> RunResult:
    """Replay once. Branch failures become a ``RunResult`` with ``failure`` set to a
    code from ``RUN_FAILURES``: anything else the agent raises — whatever its class, code
    or text — is ``agent_error``. ``failure_detail`` stays in the worker. Boundaries in
    ``unfaithful`` are served without their substitute (``check_substitutes``).
    ``departed``: the run departs from the record before its first call (a code
    revision's arms), so calls are matched by content, not position. ``from_cut``: the
    run starts from that cut's recorded state (invariant 8). ``inference`` answers the
    ``governed`` boundaries' calls the record does not hold (invariant 11), and every one
    of them if ``reask``."""
    ctx = ReplayContext(
        trajectory=trajectory,
        seed=seed,
        audit_time=audit_time,
        unfaithful=unfaithful,
        departed=departed,
        from_cut=from_cut,
        inference=inference,
        governed=governed,
        reask=reask,
    )
    ctx.credentials = agent.credentials
    try:
        with observing(ctx, process_wide=True):  # the run's ambient reads: the record's
            outcome = agent.run(ctx, dict(trajectory.inputs))
        # the agent caught the abstention (its own ``except Exception``): still one
        if ctx.ambient_missing:  # the run read an input it does not know
            raise AmbientInputMissing("the run read an input outside ctx the record does not hold")
        if any(how == "unservable" for _, how in ctx.served):
            raise Unservable("the run went on past a call the replay could not serve")
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
        # a framework re-raises the replay's abstention as its own error (``raise
        # FrameworkError(...) from exc``): the abstention it carries is the failure
        layers, failure, detail = None, _abstention(exc) or AGENT_ERROR, type(exc).__name__
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
        unused=ctx.unused,
        extrapolated=tuple(ctx.extrapolated),
    )
