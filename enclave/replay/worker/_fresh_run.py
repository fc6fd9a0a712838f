"""One replayed run in a fresh process, and its result's way back to the template.

The worker's template process never imports agent code: each run is a fork of it that
imports the agent, replays once and sends its ``RunResult`` back (:func:`replay_child`).
That process ran agent code, so the template rebuilds the result field by field and
refuses anything out of shape (:func:`result_from_child`) before reducing it.

The result travels as standard JSON text (NaN, infinities, integers of any size and
lone surrogates survive it), so a seed's reduction in the template sees the values the
run produced; layers that are no JSON at all arrive as :data:`UNCOMPARABLE`, which
refuses every comparison as an in-process reduction would have refused them.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, NoReturn

from ..._errors import BadInput
from ...capture import AgentSpec, available_agents, import_agent
from .._errors import RUN_FAILURES, ReplyInvalid, Unservable
from .._model import RunResult, Trajectory
from ._engine import replay_run
from ._fidelity import check_substitutes

__all__ = [
    "UNCOMPARABLE",
    "agent_target",
    "fidelity_child",
    "fidelity_from_child",
    "replay_child",
    "result_from_child",
]

_KEYS = frozenset(
    {
        "seed",
        "variant",
        "failure",
        "failure_detail",
        "layers",
        "uncomparable",
        "live_state_reads",
        "unverifiable_effects",
        "unserved_effects",
        "served",
        "unused",
        "extrapolated",
    }
)


class _Uncomparable(Mapping[str, Any]):
    """Layers that could not be carried: any look at them is a TypeError, which the
    seed's reduction reports as ``value_out_of_range``."""

    def _refuse(self) -> NoReturn:
        raise TypeError("layers that are not JSON")

    def __getitem__(self, key: str) -> Any:
        self._refuse()

    def __iter__(self) -> Iterator[str]:
        self._refuse()

    def __len__(self) -> int:
        self._refuse()


UNCOMPARABLE: Mapping[str, Any] = _Uncomparable()


def agent_target(name: str) -> str:
    """The ``module:attribute`` an agent name resolves to (entry-point metadata only, no
    import): resolved once in the template, imported in every run."""
    return available_agents().get(name, name)


def replay_child(
    *,
    target: str,
    trajectory: Trajectory,
    seed: int,
    variant: str,
    audit_time: datetime,
    unfaithful: frozenset[str] = frozenset(),
    import_root: str | None = None,
    departed: bool = False,
    from_cut: str | None = None,
    governed: frozenset[str] = frozenset(),
    reask: bool = False,
) -> dict[str, Any]:
    """In the run's own process: import the agent (a candidate's from ``import_root``,
    put first on this process's import path), replay once, encode the result. Calls of
    the ``governed`` boundaries the record does not hold are asked of the supervisor."""
    result = replay_run(
        trajectory=trajectory,
        agent=_import(target, import_root),
        seed=seed,
        variant=variant,
        audit_time=audit_time,
        unfaithful=unfaithful,
        departed=departed,
        from_cut=from_cut,
        inference=_ask_supervisor if governed else None,
        governed=governed,
        reask=reask,
    )
    wire: dict[str, Any] = {
        "seed": result.seed,
        "variant": result.variant,
        "failure": result.failure,
        "failure_detail": result.failure_detail,
        "live_state_reads": [list(x) for x in result.live_state_reads],
        "unverifiable_effects": list(result.unverifiable_effects),
        "unserved_effects": list(result.unserved_effects),
        "served": [list(x) for x in result.served],
        "unused": list(result.unused),
        "extrapolated": list(result.extrapolated),
    }
    layers = None if result.layers is None else dict(result.layers)
    try:
        return {"run": json.dumps({**wire, "layers": layers, "uncomparable": False})}
    except (TypeError, ValueError, RecursionError):
        return {"run": json.dumps({**wire, "layers": None, "uncomparable": True})}


def _ask_supervisor(boundary: str, request: dict[str, Any]) -> dict[str, Any]:
    from ...sandbox.inside import AskRefused, ask

    try:
        return ask({"boundary": boundary, "request": request})
    except AskRefused:
        raise Unservable("the supervisor gave no answer") from None


def fidelity_child(
    *, target: str, trajectory: Trajectory, score_tolerance: float
) -> dict[str, Any]:
    """In a process of its own: run every declared substitute on its recorded requests."""
    checked = check_substitutes(import_agent(target), trajectory, score_tolerance=score_tolerance)
    return {"fidelity": json.dumps(checked)}


def fidelity_from_child(reply: Mapping[str, Any], boundaries: frozenset[str]) -> dict[str, Any]:
    """The fidelity report, rebuilt: recorded boundary names, a count and a verdict each."""
    text = reply.get("fidelity")
    if set(reply) != {"fidelity"} or not isinstance(text, str) or len(text) > 1 << 20:
        raise ReplyInvalid()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ReplyInvalid() from None
    if not isinstance(data, dict) or not set(data) <= boundaries:
        raise ReplyInvalid()
    out: dict[str, Any] = {}
    for name, item in data.items():
        if not isinstance(item, dict) or set(item) != {"checked", "faithful"}:
            raise ReplyInvalid()
        if type(item["checked"]) is not int or type(item["faithful"]) is not bool:
            raise ReplyInvalid()
        out[name] = {"checked": item["checked"], "faithful": item["faithful"]}
    return out


def _import(target: str, import_root: str | None) -> AgentSpec:
    if import_root is not None:
        sys.path.insert(0, import_root)  # this run's process only: it dies with it
        importlib.invalidate_caches()
    return import_agent(target)


def load_only(
    target: str, import_root: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """In a process of its own: import the agent once, as every run will (a candidate
    must declare the captured agent's name: it is a revision of that agent)."""
    agent = _import(target, import_root)
    if name is not None and agent.name != name:
        raise BadInput("the candidate is not a revision of the captured agent")
    return {"loaded": True}


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReplyInvalid()
    return tuple(value)


def _pairs(value: Any) -> list[tuple[str, str]]:
    """(call id, how) pairs; their names and ways are checked by the supervisor."""
    if not isinstance(value, list) or not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(p, str) for p in v) for v in value
    ):
        raise ReplyInvalid()
    return [(v[0], v[1]) for v in value]


def result_from_child(reply: Mapping[str, Any], *, seed: int, variant: str) -> RunResult:
    """The run's result, rebuilt in the template from what its process sent."""
    text = reply.get("run")
    if set(reply) != {"run"} or not isinstance(text, str):
        raise ReplyInvalid()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ReplyInvalid() from None
    if not isinstance(data, dict) or set(data) != _KEYS:
        raise ReplyInvalid()
    if type(data["seed"]) is not int or data["seed"] != seed or data["variant"] != variant:
        raise ReplyInvalid()
    failure, detail, layers = data["failure"], data["failure_detail"], data["layers"]
    if failure is not None and failure not in RUN_FAILURES:
        raise ReplyInvalid()
    if detail is not None and not isinstance(detail, str):
        raise ReplyInvalid()
    if type(data["uncomparable"]) is not bool or not (layers is None or isinstance(layers, dict)):
        raise ReplyInvalid()
    reads = data["live_state_reads"]
    if not isinstance(reads, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(p, str) for p in r) for r in reads
    ):
        raise ReplyInvalid()
    return RunResult(
        seed=seed,
        variant=variant,
        failure=failure,
        failure_detail=detail,
        layers=UNCOMPARABLE if data["uncomparable"] else layers,
        live_state_reads=tuple((r[0], r[1]) for r in reads),
        unverifiable_effects=_names(data["unverifiable_effects"]),
        unserved_effects=_names(data["unserved_effects"]),
        served=tuple(_pairs(data["served"])),
        unused=_names(data["unused"]),
        extrapolated=_names(data["extrapolated"]),
    )
