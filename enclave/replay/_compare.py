"""Comparing two runs layer by layer: bounded values only, never the values themselves.

Per layer the comparison says whether it is equal (and, for the score, the delta);
for the typed proposal it names the fields that changed, not their values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger import canonical_json

from ._model import LAYERS, RecordedStep, Tolerances, layers_of

__all__ = ["compare_layers", "recorded_layers"]


def _equal(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def compare_layers(
    reference: Mapping[str, Any], run: Mapping[str, Any], tolerances: Tolerances
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for layer in LAYERS:
        a, b = reference.get(layer), run.get(layer)
        if layer == "score":
            if not (isinstance(a, int | float) and isinstance(b, int | float)) or _bool(a, b):
                out[layer] = {"ok": False, "delta": None, "tolerance": tolerances.score}
                continue
            delta = float(b) - float(a)
            out[layer] = {
                "ok": abs(delta) <= tolerances.score,
                "delta": delta,
                "tolerance": tolerances.score,
            }
            continue
        equal = _equal(a, b)
        entry: dict[str, Any] = {"ok": equal or layer in tolerances.ignored, "equal": equal}
        if layer == "proposal" and isinstance(a, Mapping) and isinstance(b, Mapping):
            entry["changed_fields"] = sorted(
                k for k in set(a) | set(b) if k not in a or k not in b or not _equal(a[k], b[k])
            )
        out[layer] = entry
    return out


def recorded_layers(trajectory_steps: Iterable[RecordedStep]) -> dict[str, Any]:
    """The layers of the recorded run itself, from its outcome and recorded responses."""
    steps = list(trajectory_steps)
    return layers_of(steps[-1].response, ((step.kind, step.response) for step in steps))


def _bool(*values: Any) -> bool:
    return any(isinstance(v, bool) for v in values)
