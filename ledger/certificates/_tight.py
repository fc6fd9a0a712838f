"""What a v3 certificate keeps of the full comparison (``tight_predicate``).

The issuer builds the comparison with every count (a v2-shaped predicate) and states
only this much of it: a pure function, so the parity corpus and tests derive v3
predicates exactly as the issuer does.

* no ``sample_rows``; the effect has no histogram, its per-layer changes are ``none``,
  ``some`` or ``all`` of the N samples, and its TOST interval and minimum detectable
  delta are the ones its mean and two-sided interval imply;
* the recorded seed keeps its decisions and flip, not its score delta;
* served-by: per arm, the recorded calls together and the new calls, each mark
  ``none``, ``some`` or ``all`` of the (call, sample) cells; ``substituted`` names the
  recorded boundaries whose substitute served a call in some arm;
* a baseline layer's changed fields are counted, not named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._rules_v2 import _boundary
from ._schema_v2 import ARMS
from .statistics import derived_delta_mde, derived_equivalence

__all__ = ["coarse", "implied_figures", "tight_predicate"]

NEW_CALLS = "new calls"  # the served-by row of the calls the record does not know


def coarse(count: int, samples: int) -> str:
    """``none``, ``some`` or ``all`` of ``samples``."""
    return "none" if count == 0 else "all" if count == samples else "some"


def _served_by(rows: list[dict[str, Any]], samples: int) -> list[dict[str, Any]]:
    out = []
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        for calls, group in (
            ("recorded", [r for r in mine if r["call"] != NEW_CALLS]),
            ("new", [r for r in mine if r["call"] == NEW_CALLS]),
        ):
            if not group:
                continue
            marks = [k for k in group[0] if k not in ("arm", "call")]
            cells = len(group) * samples
            out.append(
                {"arm": arm, "calls": calls}
                | {mark: coarse(sum(r[mark] for r in group), cells) for mark in marks}
            )
    return out


def _substituted(rows: list[dict[str, Any]]) -> list[str]:
    recorded = (r for r in rows if r["call"] != NEW_CALLS)
    return sorted({_boundary(r["call"]) for r in recorded if r["substitute"]})


def implied_figures(
    effect: Mapping[str, Any], n: int, resolution: float
) -> tuple[tuple[float, float], float]:
    """The TOST interval and the minimum detectable delta a numeric effect's mean and
    two-sided interval imply (what a v3 effect states, and its verifier recomputes)."""
    mean, interval = effect["mean_delta"], effect["delta_interval"]
    equivalence = derived_equivalence(
        mean,
        interval,
        n=n,
        resolution=resolution,
        confidence=effect["confidence"],
        alpha=effect["equivalence"]["alpha"],
    )
    mde = derived_delta_mde(
        mean,
        interval,
        n=n,
        resolution=resolution,
        tolerance=effect["score_tolerance"],
        confidence=effect["confidence"],
        power=effect["mde"]["power"],
    )
    return equivalence, mde


def _effect(effect: Mapping[str, Any], samples: int, resolution: float) -> dict[str, Any]:
    out = {k: v for k, v in effect.items() if k != "histogram"}
    out["layer_changes"] = {k: coarse(v, samples) for k, v in effect["layer_changes"].items()}
    if effect["outcome"] == "numeric" and samples >= 2:
        equivalence, mde = implied_figures(effect, samples, resolution)
        out["equivalence"] = {**effect["equivalence"], "delta_interval": list(equivalence)}
        out["mde"] = {**effect["mde"], "delta": mde}
    return out


def _baseline(baseline: Mapping[str, Any]) -> dict[str, Any]:
    layers = {
        name: {k: len(v) if k == "changed_fields" else v for k, v in layer.items()}
        for name, layer in baseline["layers"].items()
    }
    return {**baseline, "layers": layers}


def tight_predicate(predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The v3 predicate of a v2-shaped one (its disclosure is the caller's to state)."""
    out = {k: v for k, v in predicate.items() if k != "sample_rows"}
    samples = (predicate.get("samples") or {}).get("count", 0)
    if predicate.get("baseline") is not None:
        out["baseline"] = _baseline(predicate["baseline"])
    if predicate.get("effect") is not None:
        resolution = predicate["disclosure"]["resolution"]
        out["effect"] = _effect(predicate["effect"], samples, resolution)
    seed = predicate.get("recorded_seed")
    if seed is not None:
        out["recorded_seed"] = {k: v for k, v in seed.items() if k != "delta"}
    rows = predicate.get("served_by")
    out["served_by"] = None if rows is None else _served_by(rows, samples)
    out["substituted"] = None if rows is None else _substituted(rows)
    return out
