"""Release-gate throughput: specimens per minute through ``regress`` with 1 and 2
in-process workers, against the same code-revision audits run one by one with
``run_audit`` (the embedded path of ``replay-enclave audit``).

A fresh home captures the procurement incident on ``--specimens`` seeds, tags them, and
writes a candidate that shifts every score by -0.02. Each configuration reruns the whole
library with ``--samples`` paired samples per specimen; the clock covers submission,
every job and the signed report (for ``regress``) or every audit (one by one).

Against the floor of the design, measured in the same run: the library's replayed runs
(three per paired sample, the repeat of 5% of the seeds included, the baseline gates
left out) at the cost of an empty run of the same template (``benchmarks/_fork_floor.py``:
fork, a one-frame reply, exit, reap) on every core at once. Target: 200 specimens x 100
samples with 2 workers in 4 minutes (scaled to the library measured).

Run: ``python benchmarks/regress.py [--specimens N] [--samples S] [--only 2]`` (the
target's library is 200 specimens x 100 samples; ``--only 2`` measures the 2-worker
configuration alone).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.replay import empty_run  # noqa: E402
from enclave._home import Home  # noqa: E402 - the checkout's code, not an installed copy
from enclave._runtime import Runtime  # noqa: E402
from enclave.capture import capture  # noqa: E402
from enclave.incidents import procurement  # noqa: E402
from enclave.release import RegressPlan, Selector, regress, select, tag_specimen  # noqa: E402
from enclave.replay import (  # noqa: E402
    AuditRequest,
    CandidateCode,
    Intervention,
    Strategy,
    run_audit,
)
from enclave.replay.stages import repeat_seeds  # noqa: E402
from tests.agents.candidates import score_shifted_run, write_candidate  # noqa: E402

# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites)
ROWS = (
    "audits one by one (run_audit)",
    "regress, 1 in-process worker",
    "regress, 2 in-process workers",
    "their runs at the empty run's cost",
)
TARGET_SECONDS = 240.0  # 200 specimens x 100 samples, 2 workers
TARGET_LIBRARY = 200 * 100


def runs(specimens: int, samples: int) -> int:
    """The replayed runs of the library's audits (the baseline gates' left out)."""
    return specimens * 3 * (samples + len(repeat_seeds(range(samples))))


def _candidate(root: Path) -> CandidateCode:
    return write_candidate(root, "po_next", score_shifted_run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specimens", type=int, default=8)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument(
        "--only", choices=("1", "2"), help="measure only regress with this many workers"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="regress-bench-"))
    runtime = Runtime.open(Home.init(work / "home"))
    base = procurement.BASELINE_INPUT
    now = datetime.now(UTC)
    for seed in range(1, args.specimens + 1):
        sid = capture(
            runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=seed
        ).specimen_id
        tag_specimen(runtime, sid, ["bench"], now=now)
    (work / "cand").mkdir()
    candidate = _candidate(work / "cand")
    selection = select(runtime, Selector(tags=("bench",)))
    plan = RegressPlan(
        samples=args.samples, purpose="bench", requester="bench", candidate=candidate
    )
    rows: list[tuple[str, float]] = []

    if args.only is None:
        start = time.perf_counter()
        for sid in selection.specimens:
            run_audit(
                runtime,
                AuditRequest(
                    specimen_id=sid,
                    intervention=Intervention(Strategy.CODE),
                    purpose="bench",
                    requester="bench",
                    samples=args.samples,
                    candidate=candidate,
                ),
                now=datetime.now(UTC),
            )
        rows.append((ROWS[0], time.perf_counter() - start))
    for workers, label in ((1, ROWS[1]), (2, ROWS[2])):
        if args.only not in (None, str(workers)):
            continue
        start = time.perf_counter()
        regress(runtime, selection, plan, now=datetime.now(UTC), local=True, workers=workers)
        rows.append((label, time.perf_counter() - start))
    empty = empty_run(runtime, selection.specimens[0], datetime.now(UTC) + timedelta(minutes=1))
    runtime.close()
    n = len(selection.specimens)
    cores = len(os.sched_getaffinity(0))
    floor = runs(n, args.samples) * empty / cores
    target = TARGET_SECONDS * n * args.samples / TARGET_LIBRARY
    print(f"{n} specimens x {args.samples} samples ({runs(n, args.samples)} runs), {cores} cores")
    one_by_one = dict(rows).get(ROWS[0])
    head = f"{'configuration':40} {'seconds':>8} {'specimens/min':>14} {'vs floor':>9}"
    print(f"{head} {'one by one / it':>16}  target")
    for name, seconds in rows:
        speedup = "" if one_by_one is None else f"{one_by_one / seconds:.2f}x"
        verdict = ""
        if name == ROWS[2]:
            verdict = f"{target:.1f} s: {'met' if seconds <= target else 'MISSED'}"
        print(
            f"{name:40} {seconds:8.1f} {60 * n / seconds:14.1f} {seconds / floor:8.2f}x "
            f"{speedup:>16}  {verdict}"
        )
    print(f"{ROWS[3]:40} {floor:8.1f}   (an empty run: {empty * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
