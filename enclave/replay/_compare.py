"""Comparing two runs layer by layer: bounded values only, never the values themselves.

Per layer the comparison says whether it is equal (and, for the score, the delta,
quantised to the resolution the score tolerance declares and clamped to [-1, 1]; ``ok``
is decided on the exact delta first). For the typed proposal it names the fields that
changed, not their values — and only fields the *reference* (the recorded run) has: a
field that exists only in the compared run is ``new_field #k``, never its name.

An outcome without a score (a categorical agent) has ``None`` there in both runs: the
score layer is then equal, with no delta. A score on one side only is a difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger import canonical_json

from ._model import LAYERS, RecordedStep, Tolerances, layers_of
from ._quantize import quantize, resolution_for

__all__ = ["MAX_NEW_FIELDS", "MAX_PROPOSAL_FIELDS", "compare_layers", "recorded_layers"]

MAX_PROPOSAL_FIELDS = 64  # recorded proposal keys reported by name (sorted, the first 64)
MAX_NEW_FIELDS = 16  # fields only the compared run has: counted, up to this many


def _equal(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def compare_layers(
    reference: Mapping[str, Any], run: Mapping[str, Any], tolerances: Tolerances
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for layer in LAYERS:
        a, b = reference.get(layer), run.get(layer)
        if layer == "score":
            if a is None and b is None:  # a categorical outcome: nothing to compare
                out[layer] = {"ok": True, "equal": True, "delta": None}
                continue
            if not (isinstance(a, int | float) and isinstance(b, int | float)) or _bool(a, b):
                out[layer] = {"ok": False, "delta": None, "tolerance": tolerances.score}
                continue
            delta = float(b) - float(a)
            out[layer] = {
                "ok": abs(delta) <= tolerances.score,
                "delta": quantize(delta, resolution_for(tolerances.score)),
                "tolerance": tolerances.score,
            }
            continue
        equal = _equal(a, b)
        entry: dict[str, Any] = {"ok": equal or layer in tolerances.ignored, "equal": equal}
        if layer == "proposal" and isinstance(a, Mapping) and isinstance(b, Mapping):
            entry["changed_fields"] = _changed_fields(a, b)
        out[layer] = entry
    return out


def _changed_fields(reference: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    known = set(sorted(map(str, reference))[:MAX_PROPOSAL_FIELDS])
    named = sorted(k for k in known if k not in run or not _equal(reference[k], run[k]))
    new = sum(1 for k in run if k not in known)
    return named + [f"new_field #{n}" for n in range(min(new, MAX_NEW_FIELDS))]


def recorded_layers(trajectory_steps: Iterable[RecordedStep]) -> dict[str, Any]:
    """The layers of the recorded run itself, from its outcome and recorded responses."""
    steps = list(trajectory_steps)
    return layers_of(steps[-1].response, ((step.kind, step.response) for step in steps))


def _bool(*values: Any) -> bool:
    return any(isinstance(v, bool) for v in values)
