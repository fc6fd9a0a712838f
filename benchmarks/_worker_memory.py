"""The memory of a replay worker, for ``benchmarks/replay.py --memory``.

A worker is its template and the run forked from it; runs share the template's pages
until they write them. What a worker with two runs alive at once occupies is therefore
the template's resident set plus, for each run, the memory that run alone holds (its
private pages: what it copied on write or allocated), measured from the host's
``/proc`` while a real batch replays:

    template RSS (peak) + 2 x a run's private memory (peak)

against the resident set of a bare interpreter that imported the same modules (the
worker's own and the batch's preload) and did nothing else. Target: 1.5x.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROWS = (
    "worker memory: template + 2 runs",
    "template RSS (peak)",
    "a run's private memory (peak)",
)
TARGET = 1.5
ROOT = Path(__file__).resolve().parents[1]
WORKER_MODULE = "enclave.sandbox.inside._worker"
_POLL_SECONDS = 0.0005


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as fh:
                found += [int(p) for p in fh.read().split()]
    except OSError:  # it ended while we looked
        pass
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _rollup(pid: int) -> dict[str, int] | None:
    """``/proc/<pid>/smaps_rollup`` in KiB, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            lines = fh.read().splitlines()[1:]
    except OSError:
        return None
    values = {}
    for line in lines:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])
    return values


def _templates(root: int) -> Iterator[int]:
    """Interpreters below ``root`` started by bubblewrap: the templates; their children
    are runs. (A child of ``root`` not yet replaced by ``bwrap`` is a copy of ``root``.)"""
    todo = [(pid, root) for pid in _children(root)]
    while todo:
        pid, parent = todo.pop()
        if _comm(pid).startswith("python") and _comm(parent) == "bwrap":
            yield pid
        elif _comm(pid) == "bwrap":
            todo += [(child, pid) for child in _children(pid)]


@contextmanager
def sampled() -> Iterator[dict[str, int]]:
    """Poll this process's workers while the body runs; yields the peaks found so far
    (KiB): ``template_rss``, ``run_private``, and ``samples`` (runs seen)."""
    peaks = {"template_rss": 0, "run_private": 0, "samples": 0}
    done = threading.Event()

    def poll() -> None:
        me = os.getpid()
        while not done.is_set():
            for template in _templates(me):
                own = _rollup(template)
                if own is not None:
                    peaks["template_rss"] = max(peaks["template_rss"], own["Rss"])
                for run in _children(template):
                    seen = _rollup(run)
                    if seen is not None:
                        peaks["samples"] += 1
                        private = seen["Private_Clean"] + seen["Private_Dirty"]
                        peaks["run_private"] = max(peaks["run_private"], private)
            time.sleep(_POLL_SECONDS)

    poller = threading.Thread(target=poll, name="memory-poll", daemon=True)
    poller.start()
    try:
        yield peaks
    finally:
        done.set()
        poller.join()


def bare_interpreter_rss(modules: tuple[str, ...]) -> int:
    """KiB resident in a fresh interpreter that imported ``modules`` (as the worker
    starts: no site directory of the user, no current directory on the path)."""
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT)!r}]\n"
        f"for name in {list(modules)!r}: __import__(name)\n"
        "print(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-s", "-P", "-c", code], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip())


def measure(replay_batch: Callable[[], Any], preload: tuple[str, ...]) -> dict[str, int]:
    """Peaks of one replayed batch, and the bare interpreter's resident set (KiB)."""
    with sampled() as peaks:
        replay_batch()
    if not peaks["samples"] or not peaks["template_rss"]:
        raise RuntimeError("no worker was seen: nothing measured")
    return {**peaks, "bare_rss": bare_interpreter_rss((WORKER_MODULE, *preload))}


def table(m: dict[str, int], samples: int) -> str:
    mib = 1 / 1024
    worker = m["template_rss"] + 2 * m["run_private"]
    ratio = worker / m["bare_rss"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    return "\n".join(
        [
            f"procurement model r1->r2, {samples} paired samples in one worker; "
            f"{m['samples']} looks at a run; reference: a bare interpreter with the "
            "same imports",
            f"{'measure':<36}{'MiB':>9}{'reference':>11}{'ratio':>8}{'target':>8}  verdict",
            f"{ROWS[0]:<36}{worker * mib:>9.1f}{m['bare_rss'] * mib:>11.1f}"
            f"{ratio:>7.2f}x{TARGET:>7g}x  {verdict}",
            f"{'    ' + ROWS[1]:<36}{m['template_rss'] * mib:>9.1f}",
            f"{'    ' + ROWS[2]:<36}{m['run_private'] * mib:>9.1f}",
        ]
    )
