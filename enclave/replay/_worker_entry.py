"""What runs inside the isolated worker: load one job's trajectories, replay runs.

The worker is untrusted (it executes agent code); it holds plaintext only for the one
specimen it was sent, and answers with run results over its inherited socket.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..capture import AgentSpec, load_agent
from ._engine import replay_run
from ._model import Trajectory

__all__ = ["handle"]

_job: dict[str, Any] = {}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "load":
        _job.clear()
        _job["agent"] = load_agent(str(request["agent"]))
        _job["variants"] = {
            name: Trajectory.from_dict(data) for name, data in request["trajectories"].items()
        }
        _job["audit_time"] = datetime.fromisoformat(str(request["audit_time"]))
        return {"loaded": sorted(_job["variants"])}
    if op == "run":
        agent: AgentSpec = _job["agent"]
        results = [
            replay_run(
                trajectory=_job["variants"][run["variant"]],
                agent=agent,
                seed=int(run["seed"]),
                variant=str(run["variant"]),
                audit_time=_job["audit_time"],
            ).to_dict()
            for run in request["runs"]
        ]
        return {"results": results}
    raise ValueError("unknown operation")
