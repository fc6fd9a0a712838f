"""What a verdict reports, one small frozen type per concept: auditability, placebo,
effect (with its histogram, equivalence test and minimum detectable effects) and the
recorded seed's own counterfactual.

Each has ``to_json()``: exactly the predicate's JSON for it (``docs/certificate-v2.md``),
so the signed bytes come from these objects unchanged. ``Auditability`` is also stored
with an audit's preparation and read back with ``from_json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ledger.certificates import AuditabilityClass, AuditabilityReason

__all__ = [
    "Auditability",
    "Counterfactual",
    "Effect",
    "Equivalence",
    "Histogram",
    "MinimumDetectable",
    "Placebo",
    "RecordedSeed",
]

_JOIN = "; "


@dataclass(frozen=True, kw_only=True, slots=True)
class Auditability:
    """Whether the branch admits a counterfactual conclusion, and why."""

    class_: AuditabilityClass
    reasons: tuple[AuditabilityReason, ...]
    first_unverifiable_step: str | None = None
    live_state_fields: tuple[str, ...] = ()

    @classmethod
    def not_assessed(cls) -> Auditability:
        """A failed or unreproduced audit: no intervened branch was compared."""
        return cls(
            class_=AuditabilityClass.NOT_ASSESSED, reasons=(AuditabilityReason.NOT_COMPARED,)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.class_.value,
            "first_unverifiable_step": self.first_unverifiable_step,
            "live_state_fields": list(self.live_state_fields),
            "reason": _JOIN.join(reason.value for reason in self.reasons),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Auditability:
        step = data.get("first_unverifiable_step")
        return cls(
            class_=AuditabilityClass(data["class"]),
            reasons=_reasons(str(data["reason"])),
            first_unverifiable_step=None if step is None else str(step),
            live_state_fields=tuple(str(f) for f in data.get("live_state_fields", ())),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Placebo:
    """The target replaced by its own value, against the paired baseline."""

    passed: bool
    max_abs_delta: float
    flips: int

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "max_abs_delta": self.max_abs_delta, "flips": self.flips}


@dataclass(frozen=True, kw_only=True, slots=True)
class Histogram:
    """Counts of paired score deltas per bin; ``edges`` has one more entry."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "counts": list(self.counts)}


@dataclass(frozen=True, kw_only=True, slots=True)
class Equivalence:
    """The TOST equivalence test: its interval (None for a categorical outcome) and the
    flip rate's one-sided upper bound."""

    alpha: float
    delta_interval: tuple[float, float] | None
    flip_upper: float

    def to_json(self) -> dict[str, Any]:
        return {
            "test": "TOST",
            "alpha": self.alpha,
            "delta_interval": _pair(self.delta_interval),
            "flip_upper": self.flip_upper,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class MinimumDetectable:
    """The effects this N would detect with ``power``."""

    power: float
    delta: float | None
    flip_rate: float | None

    def to_json(self) -> dict[str, Any]:
        return {"power": self.power, "delta": self.delta, "flip_rate": self.flip_rate}


@dataclass(frozen=True, kw_only=True, slots=True)
class Effect:
    """The intervention's effect over N paired samples (``_effect``). The numeric fields
    (``mean_delta``, ``delta_interval``, ``histogram``, the equivalence interval and
    ``mde.delta``) are None exactly for a categorical outcome."""

    outcome: Literal["numeric", "categorical"]
    mean_delta: float | None
    delta_interval: tuple[float, float] | None
    flips: int
    flip_rate: float
    flip_interval: tuple[float, float]
    baseline_rate: float
    intervened_rate: float
    histogram: Histogram | None
    confidence: float
    score_tolerance: float
    flip_tolerance: float
    equivalence: Equivalence
    mde: MinimumDetectable
    layer_changes: Mapping[str, int]  # per layer, samples where the arms differ

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "mean_delta": self.mean_delta,
            "delta_interval": _pair(self.delta_interval),
            "flips": self.flips,
            "flip_rate": self.flip_rate,
            "flip_interval": list(self.flip_interval),
            "baseline_rate": self.baseline_rate,
            "intervened_rate": self.intervened_rate,
            "histogram": None if self.histogram is None else self.histogram.to_json(),
            "confidence": self.confidence,
            "score_tolerance": self.score_tolerance,
            "flip_tolerance": self.flip_tolerance,
            "equivalence": self.equivalence.to_json(),
            "mde": self.mde.to_json(),
            "layer_changes": dict(self.layer_changes),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Counterfactual:
    """One seed's paired runs: decision labels, whether the decision flipped, the
    quantised score delta (None for a categorical outcome)."""

    flip: bool
    baseline: str
    intervened: str
    delta: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "flip": self.flip,
            "baseline": self.baseline,
            "intervened": self.intervened,
            "delta": self.delta,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedSeed:
    """The recorded seed, whether it was among the sampled seeds, and its counterfactual
    when one was run."""

    seed: int
    sampled: bool
    counterfactual: Counterfactual | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seed": self.seed, "sampled": self.sampled}
        if self.counterfactual is not None:
            out.update(self.counterfactual.to_json())
        return out


def _reasons(text: str) -> tuple[AuditabilityReason, ...]:
    """``Auditability.to_json``'s ``reason`` read back: reasons in their order, each
    matched whole (one of them holds the separator itself)."""
    out: list[AuditabilityReason] = []
    rest = text
    while rest:
        found = next((r for r in AuditabilityReason if rest.startswith(r.value)), None)
        if found is None:
            raise ValueError("not an auditability reason")
        out.append(found)
        rest = rest[len(found.value) :].removeprefix(_JOIN)
    if not out:
        raise ValueError("no auditability reason")
    return tuple(out)


def _pair(pair: Sequence[float] | None) -> list[float] | None:
    return None if pair is None else list(pair)
