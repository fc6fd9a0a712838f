"""``benchmarks/replay.py --demo``: ``replay-enclave demo`` as a person runs it, whole
process, against the floor of its design measured in the same run.

The demo captures three incidents and runs five audits of ``DEMO_SAMPLES`` paired
samples, each sample three runs, plus the repeat of 5% of the seeds: every run a
process of its own. Its floor is those runs at the cost of an empty run of the same
template (``benchmarks/_fork_floor.py``: fork, a one-frame reply, exit, reap) on every
core at once. Target: 6 s wall on 2 cores.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from enclave.cli._demo import DEMO_SAMPLES
from enclave.replay.stages import repeat_seeds

AUDITS = 5
TARGET_SECONDS = 6.0
ROWS = ("demo, whole process", "its runs at the empty run's cost")


def runs() -> int:
    """The replayed runs of the demo's five audits (the baseline gates' left out)."""
    return AUDITS * 3 * (DEMO_SAMPLES + len(repeat_seeds(range(DEMO_SAMPLES))))


def measure(rounds: int, empty_run: Callable[[], float]) -> dict[str, Any]:
    """Median wall seconds of the demo in a fresh home, and of one empty run, alternated."""
    demo: list[float] = []
    empty: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="demo-bench-") as tmp:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", "from enclave.cli import main; main()"]
                + ["demo", "--json", "--home", str(Path(tmp) / "home")],
                check=True,
                capture_output=True,
            )
            demo.append(time.perf_counter() - start)
        empty.append(empty_run())
    return {"rounds": rounds, "demo": statistics.median(demo), "empty": statistics.median(empty)}


def table(m: dict[str, Any]) -> str:
    cores = len(os.sched_getaffinity(0))
    floor = runs() * m["empty"] / cores
    verdict = "met" if m["demo"] <= TARGET_SECONDS else "MISSED"
    return "\n".join(
        [
            f"replay-enclave demo ({AUDITS} audits of {DEMO_SAMPLES} samples, {runs()} runs), "
            f"{cores} cores, median of {m['rounds']} rounds",
            f"{'measure':<36}{'seconds':>10}{'ratio':>8}{'target':>9}  verdict",
            f"{ROWS[0]:<36}{m['demo']:>10.2f}{m['demo'] / floor:>7.2f}x{TARGET_SECONDS:>8g}s  "
            f"{verdict}",
            f"{'    ' + ROWS[1]:<36}{floor:>10.2f}   (an empty run: {m['empty'] * 1e3:.2f} ms)",
        ]
    )
