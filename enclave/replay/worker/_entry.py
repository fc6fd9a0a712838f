"""What runs inside the isolated worker: hold one job's trajectories, replay runs.

This handler runs in the worker's template process (``enclave.sandbox``), which never
imports agent code: every replayed run is ``fresh(...)`` — a process forked from the
template for that run alone, importing the agent and replaying once — so no run starts
from state an earlier run left. ``load`` keeps the trajectories here (and imports the
agent once in a run of its own, so that a failing import fails the load); ``run`` replays
runs (the baseline gate); ``samples`` replays baseline, intervened and placebo for each
seed, each in its own process, and reduces them here to ``SampleSummary`` metadata.

What a run's process sends back is untrusted (it ran agent code): ``_fresh_run`` rebuilds
it before anything here uses it, and the supervisor validates every reply of this
handler in the closed schema of ``_reply`` as well. An operation that runs agent code is
one more entry in ``_OPERATIONS`` that calls ``fresh``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ...capture import source_root_identity
from .._model import RunResult, Trajectory, boundary_names
from ._fresh_run import (
    agent_target,
    fidelity_child,
    fidelity_from_child,
    load_only,
    replay_child,
    result_from_child,
)
from ._outgoing import run_wire, summarize_seed
from ._served import ARMS, arm_order

__all__ = ["handle"]

#: Runs ``fn`` in a fresh process forked from the template; returns what it sent. The
#: optional tag (seed and arm) goes with the run's asks to the supervisor.
Fresh = Callable[..., dict[str, Any]]
Operation = Callable[[dict[str, Any], Fresh], dict[str, Any]]

_job: dict[str, Any] = {}


def _load(request: dict[str, Any], fresh: Fresh) -> dict[str, Any]:
    _job.clear()
    # runs compile the agent's modules from their sources, the files the code identity
    # covers: a byte-code file planted beside them would otherwise run instead
    sys.dont_write_bytecode = True
    sys.pycache_prefix = "/nonexistent-pycache"  # looked in, never found, never made
    target = agent_target(str(request["agent"]))
    _job["target"] = target
    _job["variants"] = {
        name: Trajectory.from_dict(data) for name, data in request["trajectories"].items()
    }
    _job["audit_time"] = datetime.fromisoformat(str(request["audit_time"]))
    from_cut = request.get("from_cut")
    _job["from_cut"] = None if from_cut is None else str(from_cut)
    # a code revision: the candidate as this worker's view shows it, hashed here before
    # any run (no agent code has run in this process); the supervisor compares it with
    # the declared digest, so the code that runs is the code a certificate names
    candidate = request.get("candidate")
    seen = None
    if candidate is not None:
        top = str(candidate["target"]).partition(":")[0].split(".")[0]
        seen = source_root_identity(top, str(candidate["root"])).digest
    # the load step's runs (the agent imported, the substitutes checked) teach the
    # template what to compile once; no later run does
    fresh(functools.partial(load_only, target), learn=True)
    # a code revision: the intervened arm imports the candidate from its source root
    _job["candidate"] = None
    if candidate is not None:
        target_, root = str(candidate["target"]), str(candidate["root"])
        _job["candidate"] = (target_, root)
        name = _job["variants"]["baseline"].agent
        fresh(functools.partial(load_only, target_, import_root=root, name=name), learn=True)
    # every declared substitute against the record, once per worker: one that does not
    # reproduce what was recorded serves no call (its calls become unservable)
    baseline = _job["variants"]["baseline"]
    checked = fidelity_from_child(
        fresh(
            functools.partial(
                fidelity_child,
                target=target,
                trajectory=baseline,
                score_tolerance=float(request["score_tolerance"]),
            ),
            learn=True,
        ),
        frozenset(step.name for step in baseline.steps),
    )
    _job["unfaithful"] = frozenset(name for name, c in checked.items() if not c["faithful"])
    # boundaries whose calls the record lacks are asked of the supervisor (its policy)
    _job["governed"] = frozenset(str(name) for name in request.get("inference", ()))
    # one replay of the recorded baseline, its result unused: what a replay imports is
    # compiled once here, and the same for every worker of the job, whatever its seeds
    _replay(fresh, "baseline", baseline.seed, learn=True)
    loaded = {"loaded": sorted(_job["variants"]), "fidelity": checked}
    return loaded if candidate is None else {**loaded, "candidate": seen}


def _replay(
    fresh: Fresh, variant: str, seed: int, reask: bool = False, *, learn: bool = False
) -> RunResult:
    """One run of ``variant`` on ``seed`` in a process of its own. In a code revision
    the intervened arm runs the candidate and both it and the placebo arm depart from
    the record at the start (the placebo reruns the captured code so)."""
    candidate = _job.get("candidate")
    target, root = _job["target"], None
    if candidate is not None and variant == "intervened":
        target, root = candidate
    reply = fresh(
        functools.partial(
            replay_child,
            target=target,
            trajectory=_job["variants"][variant],
            seed=seed,
            variant=variant,
            audit_time=_job["audit_time"],
            unfaithful=_job["unfaithful"],
            import_root=root,
            departed=candidate is not None and variant != "baseline",
            from_cut=_job["from_cut"],
            governed=_job["governed"],
            reask=reask and bool(_job["governed"]),
        ),
        {"seed": seed, "arm": variant},
        learn=learn,
    )
    return result_from_child(reply, seed=seed, variant=variant)


def _run(request: dict[str, Any], fresh: Fresh) -> dict[str, Any]:
    runs = [
        (str(run["variant"]), int(run["seed"]), run.get("reask") is True) for run in request["runs"]
    ]
    return {"results": [run_wire(_replay(fresh, *run)) for run in runs]}


def _paired(fresh: Fresh, seed: int) -> list[RunResult]:
    """The three arms of one sample, in ``ARMS`` order, run in ``arm_order()``."""
    done = {variant: _replay(fresh, variant, seed) for variant in arm_order()}
    return [done[variant] for variant in ARMS]


def _samples(request: dict[str, Any], fresh: Fresh) -> dict[str, Any]:
    # whole paired samples, reduced here: only metadata crosses back to the supervisor
    baseline = _job["variants"]["baseline"]
    recorded = baseline.outcome.get("decision")
    names = boundary_names((step.kind, step.name) for step in baseline.steps)
    samples = []
    for seed in map(int, request["seeds"]):
        summary = summarize_seed(
            *_paired(fresh, seed), recorded_decision=recorded, boundaries=names
        )
        samples.append(summary.to_dict())
    return {"samples": samples}


_OPERATIONS: dict[str, Operation] = {"load": _load, "run": _run, "samples": _samples}


def handle(request: dict[str, Any], fresh: Fresh) -> dict[str, Any]:
    operation = _OPERATIONS.get(str(request.get("op")))
    if operation is None:
        raise ValueError("unknown operation")
    return operation(request, fresh)
