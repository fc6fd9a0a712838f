"""The sandboxed side of ``benchmarks/replay.py``'s floor: a trusted handler (preloaded
into the replay worker's template, beside what a batch preloads) that starts
``request["runs"]`` fresh runs doing nothing — the fork, the one-frame reply, the exit
and the reap of the same template a batch's runs fork from, and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Run = Callable[[], dict[str, Any]]


def handle(request: dict[str, Any], fresh: Callable[[Run], dict[str, Any]]) -> dict[str, Any]:
    runs = int(request["runs"])
    for _ in range(runs):
        fresh(dict)
    return {"runs": runs}
