"""Replay's typed objects: the recorded trajectory (plaintext, enclave-only), the
declared intervention, tolerances, and the result of one replayed run.

``Trajectory`` holds decrypted values and must never leave the enclave; everything else
here is metadata and bounded numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .._errors import BadInput

__all__ = [
    "HOLE",
    "NOT_BOUNDARIES",
    "boundary_names",
    "is_hole",
    "layers_of",
    "LAYERS",
    "RecordedStep",
    "RunResult",
    "Strategy",
    "Tolerances",
    "Trajectory",
]

# A withheld field's place in a served response: reading it is "unresolvable".
HOLE = {"$hole": "withheld"}


def is_hole(value: Any) -> bool:
    """A field whose content the replay cannot have: withheld, or kept as a digest only."""
    return isinstance(value, dict) and "$hole" in value


def layers_of(
    outcome: Mapping[str, Any], answers: Iterable[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    """A run's comparable layers from its outcome and the (kind, response) of each call,
    in order; withheld and digest-only fields are left out. Plaintext: enclave only."""
    by_kind: dict[str, list[Any]] = {"authority": [], "effect": [], "readback": []}
    for kind, response in answers:
        if kind in by_kind:
            by_kind[kind].append({k: v for k, v in response.items() if not is_hole(v)})
    return {
        "score": outcome.get("score"),
        "decision": outcome.get("decision"),
        "proposal": outcome.get("proposal"),
        "evidence": sorted(map(str, outcome.get("evidence") or [])),
        "policy": by_kind["authority"],
        "effects": by_kind["effect"],
        "readback": by_kind["readback"],
    }


LAYERS = ("score", "decision", "proposal", "evidence", "policy", "effects", "readback")

# recorded step kinds that are no declared boundary (no substitute can answer them)
NOT_BOUNDARIES = frozenset({"input", "outcome", "random", "clock", "cut"})


def boundary_names(steps: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The boundary names among recorded (kind, name) pairs: what a certificate may name
    as a boundary whose substitute answered."""
    return frozenset(name for kind, name in steps if kind not in NOT_BOUNDARIES)


class Strategy(StrEnum):
    NULLIFY = "nullify"
    REPLACE = "replace"
    PERTURB = "perturb"
    REVISION = "revision"
    CODE = "code"  # a candidate release of the agent's code (``AuditRequest.candidate``)


@dataclass(frozen=True, slots=True)
class RecordedStep:
    seq: int
    agent: str
    call_id: str
    kind: str
    name: str
    alias: str | None
    resolved: str | None
    request: Mapping[str, Any]
    response: Mapping[str, Any]
    live_state: tuple[str, ...] = ()
    token_expires_at: str | None = None
    side_effecting: bool = False
    idempotency_token: str | None = None  # plaintext, from the encrypted store
    # set by an intervention: the step where the branch departs from the record
    intervened: bool = False
    serve_by_substitute: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "agent": self.agent,
            "call_id": self.call_id,
            "kind": self.kind,
            "name": self.name,
            "alias": self.alias,
            "resolved": self.resolved,
            "request": dict(self.request),
            "response": dict(self.response),
            "live_state": list(self.live_state),
            "token_expires_at": self.token_expires_at,
            "side_effecting": self.side_effecting,
            "idempotency_token": self.idempotency_token,
            "intervened": self.intervened,
            "serve_by_substitute": self.serve_by_substitute,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedStep:
        return cls(
            seq=int(data["seq"]),
            agent=str(data["agent"]),
            call_id=str(data["call_id"]),
            kind=str(data["kind"]),
            name=str(data["name"]),
            alias=data.get("alias"),
            resolved=data.get("resolved"),
            request=dict(data["request"]),
            response=dict(data["response"]),
            live_state=tuple(data.get("live_state", ())),
            token_expires_at=data.get("token_expires_at"),
            side_effecting=bool(data.get("side_effecting", False)),
            idempotency_token=data.get("idempotency_token"),
            intervened=bool(data.get("intervened", False)),
            serve_by_substitute=bool(data.get("serve_by_substitute", False)),
        )


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A specimen's recorded run, decrypted inside the enclave."""

    specimen_id: str
    agent: str  # registry name or module:attr
    seed: int
    steps: tuple[RecordedStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen_id": self.specimen_id,
            "agent": self.agent,
            "seed": self.seed,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        return cls(
            specimen_id=str(data["specimen_id"]),
            agent=str(data["agent"]),
            seed=int(data["seed"]),
            steps=tuple(RecordedStep.from_dict(s) for s in data["steps"]),
        )

    @property
    def inputs(self) -> Mapping[str, Any]:
        return self.steps[0].response

    @property
    def outcome(self) -> Mapping[str, Any]:
        return self.steps[-1].response

    def step_by_call(self, call_id: str) -> RecordedStep:
        for step in self.steps:
            if step.call_id == call_id:
                return step
        raise BadInput("the specimen has no call with that id")


@dataclass(frozen=True)
class Tolerances:
    """Declared before anything runs. ``score`` is an absolute bound; other layers are
    load-bearing (must be equal) unless listed in ``ignored``."""

    score: float = 1e-9
    ignored: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not 0 <= self.score <= 1:
            raise BadInput("score tolerance must lie in [0, 1]")
        unknown = self.ignored - set(LAYERS)
        if unknown or "score" in self.ignored or "decision" in self.ignored:
            raise BadInput("only proposal, evidence, policy, effects or readback may be ignored")

    @classmethod
    def parse(cls, items: list[str]) -> Tolerances:
        """``score=0.001``, ``readback=ignore``, ``evidence=exact``."""
        score, ignored = 1e-9, set()
        for item in items:
            layer, sep, value = item.partition("=")
            if not sep or layer not in LAYERS:
                raise BadInput(f"tolerance must be LAYER=VALUE with LAYER in {', '.join(LAYERS)}")
            if layer == "score":
                try:
                    score = float(value)
                except ValueError:
                    raise BadInput("score tolerance must be a number") from None
            elif value == "ignore":
                ignored.add(layer)
            elif value != "exact":
                raise BadInput("non-score tolerances are 'exact' or 'ignore'")
        return cls(score=score, ignored=frozenset(ignored))

    def to_dict(self) -> dict[str, Any]:
        return {
            layer: (
                self.score if layer == "score" else ("ignore" if layer in self.ignored else "exact")
            )
            for layer in LAYERS
        }


@dataclass(frozen=True)
class RunResult:
    """One replayed run. ``failure`` is None when the run completed.

    ``layers`` holds the outcome's comparable layers (plaintext, enclave-only);
    ``trace`` is metadata only (call ids, how each call was served).
    """

    seed: int
    variant: str  # baseline | intervened | placebo
    failure: str | None
    failure_detail: str | None
    layers: Mapping[str, Any] | None
    live_state_reads: tuple[tuple[str, str], ...] = ()  # (call_id, field) read after departure
    unverifiable_effects: tuple[str, ...] = ()  # call ids whose token cannot be re-verified
    unserved_effects: tuple[str, ...] = ()  # effects not served from the effect store
    # (call_id, how) in call order; how: record | substitute | intervention | unservable
    served: tuple[tuple[str, str], ...] = ()
    unused: tuple[str, ...] = ()  # recorded call ids the run never consumed
    # boundaries whose substitute answered a request the record does not hold, each once
    extrapolated: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "variant": self.variant,
            "failure": self.failure,
            "failure_detail": self.failure_detail,
            "layers": None if self.layers is None else dict(self.layers),
            "live_state_reads": [list(x) for x in self.live_state_reads],
            "unverifiable_effects": list(self.unverifiable_effects),
            "unserved_effects": list(self.unserved_effects),
            "served": [list(x) for x in self.served],
            "unused": list(self.unused),
            "extrapolated": list(self.extrapolated),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        return cls(
            seed=int(data["seed"]),
            variant=str(data["variant"]),
            failure=data.get("failure"),
            failure_detail=data.get("failure_detail"),
            layers=data.get("layers"),
            live_state_reads=tuple((str(a), str(b)) for a, b in data.get("live_state_reads", ())),
            unverifiable_effects=tuple(data.get("unverifiable_effects", ())),
            unserved_effects=tuple(data.get("unserved_effects", ())),
            served=tuple((str(a), str(b)) for a, b in data.get("served", ())),
            unused=tuple(str(c) for c in data.get("unused", ())),
            extrapolated=tuple(str(c) for c in data.get("extrapolated", ())),
        )
