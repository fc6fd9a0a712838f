"""What runs inside the isolated worker: load one job's trajectories, replay runs.

The worker is untrusted (it executes agent code); it holds plaintext only for the one
specimen it was sent, and answers over its inherited socket in the closed reply schema
of ``_reply`` with run results (``run``: the baseline gate) or with paired samples
already reduced to ``SampleSummary`` metadata (``samples``: baseline, intervened and
placebo per seed). Agent code runs in this process and may patch anything here: the
supervisor validates every reply (``_reply.parse_*``), it does not trust this module.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from ..capture import AgentSpec, load_agent
from ._engine import replay_run
from ._model import Trajectory
from ._reply import run_wire
from ._verdict import summarize_seed

__all__ = ["handle"]

_job: dict[str, Any] = {}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "load":
        _job.clear()
        # compile the agent's modules from their sources, the files the code identity
        # covers: a byte-code file planted beside them would otherwise run instead
        sys.dont_write_bytecode = True
        sys.pycache_prefix = "/nonexistent-pycache"  # looked in, never found, never made
        _job["agent"] = load_agent(str(request["agent"]))
        _job["variants"] = {
            name: Trajectory.from_dict(data) for name, data in request["trajectories"].items()
        }
        _job["audit_time"] = datetime.fromisoformat(str(request["audit_time"]))
        return {"loaded": sorted(_job["variants"])}
    if op == "run":
        agent: AgentSpec = _job["agent"]
        results = [
            run_wire(
                replay_run(
                    trajectory=_job["variants"][run["variant"]],
                    agent=agent,
                    seed=int(run["seed"]),
                    variant=str(run["variant"]),
                    audit_time=_job["audit_time"],
                )
            )
            for run in request["runs"]
        ]
        return {"results": results}
    if op == "samples":
        # whole paired samples, reduced here: only metadata crosses back to the supervisor
        agent, variants, when = _job["agent"], _job["variants"], _job["audit_time"]
        recorded = variants["baseline"].outcome.get("decision")
        samples = []
        for seed in request["seeds"]:
            runs = [
                replay_run(
                    trajectory=variants[v], agent=agent, seed=int(seed), variant=v, audit_time=when
                )
                for v in ("baseline", "intervened", "placebo")
            ]
            samples.append(summarize_seed(*runs, recorded_decision=recorded).to_dict())
        return {"samples": samples}
    raise ValueError("unknown operation")
