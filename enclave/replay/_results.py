"""What the audit stages hand each other: metadata and bounded numbers only.

These objects are stored in the job tables and travel between hosts, so none of them
carries captured content: digests are keyed, layers are reduced to equal/not-equal and
score deltas, decisions to labels from a closed vocabulary ("recorded", a value the agent
declares, "other"), calls to names from the specimen's own vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchResult", "SampleSummary"]


@dataclass(frozen=True)
class SampleSummary:
    """One seed: baseline, intervened and placebo runs, compared inside the enclave."""

    seed: int
    failure: str | None = None
    failure_variant: str | None = None
    delta: float | None = None  # intervened score - baseline score
    flip: bool = False
    baseline_hit: bool = False  # baseline decision == recorded decision
    intervened_hit: bool = False
    placebo_equal: bool = True
    placebo_abs_delta: float = 0.0
    placebo_flip: bool = False
    live_state_reads: tuple[tuple[str, str], ...] = ()
    unverifiable_effects: tuple[str, ...] = ()
    unserved_effects: tuple[str, ...] = ()
    # decision labels (``_decisions.decision_label``): None in rows stored before them
    baseline_decision: str | None = None
    intervened_decision: str | None = None
    changed_layers: tuple[str, ...] = ()  # layers where intervened != baseline, exactly
    # (arm, call id, how): one mark per call an arm served or left unused; how is
    # record | substitute | intervention | unservable | unused (``_served.HOWS``)
    served: tuple[tuple[str, str, str], ...] = ()
    # (arm, boundary): calls the record does not hold that the boundary's substitute
    # answered in that arm (``_served.extrapolated``); empty in rows stored before it
    substituted: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        # spelled out: ``asdict`` deep-copies and costs ~40 µs, once per sample
        return {
            "seed": self.seed,
            "failure": self.failure,
            "failure_variant": self.failure_variant,
            "delta": self.delta,
            "flip": self.flip,
            "baseline_hit": self.baseline_hit,
            "intervened_hit": self.intervened_hit,
            "placebo_equal": self.placebo_equal,
            "placebo_abs_delta": self.placebo_abs_delta,
            "placebo_flip": self.placebo_flip,
            "live_state_reads": [list(x) for x in self.live_state_reads],
            "unverifiable_effects": list(self.unverifiable_effects),
            "unserved_effects": list(self.unserved_effects),
            "baseline_decision": self.baseline_decision,
            "intervened_decision": self.intervened_decision,
            "changed_layers": list(self.changed_layers),
            "served": [list(x) for x in self.served],
            "substituted": [list(x) for x in self.substituted],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleSummary:
        values = dict(data)
        values["live_state_reads"] = tuple(
            (str(a), str(b)) for a, b in values.get("live_state_reads", ())
        )
        values["unverifiable_effects"] = tuple(values.get("unverifiable_effects", ()))
        values["unserved_effects"] = tuple(values.get("unserved_effects", ()))
        values["changed_layers"] = tuple(values.get("changed_layers", ()))
        values["served"] = tuple((str(a), str(b), str(c)) for a, b, c in values.get("served", ()))
        values["substituted"] = tuple((str(a), str(b)) for a, b in values.get("substituted", ()))
        return cls(**values)


@dataclass(frozen=True)
class BatchResult:
    """A replay job's result: one summary per assigned seed, or the contamination."""

    job_id: str
    seeds: tuple[int, ...]
    samples: tuple[SampleSummary, ...]
    grant: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    # what governed inference asked in this batch, per arm (counts only), or None
    inference: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "seeds": list(self.seeds),
            "samples": [s.to_dict() for s in self.samples],
            "grant": dict(self.grant),
            "failure": self.failure,
            "inference": self.inference,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchResult:
        return cls(
            job_id=str(data["job_id"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            samples=tuple(SampleSummary.from_dict(s) for s in data["samples"]),
            grant=dict(data.get("grant") or {}),
            failure=data.get("failure"),
            inference=data.get("inference"),
        )


def seeds_of(batches: Sequence[BatchResult]) -> list[int]:
    return [s for b in batches for s in b.seeds]
