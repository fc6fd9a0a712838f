"""Release-gate throughput: specimens per minute through ``regress`` with 1 and 2
in-process workers, against the same code-revision audits run one by one with
``run_audit`` (the embedded path of ``replay-enclave audit``).

A fresh home captures the procurement incident on ``--specimens`` seeds, tags them, and
writes a candidate that shifts every score by -0.02. Each configuration reruns the whole
library with ``--samples`` paired samples per specimen; the clock covers submission,
every job and the signed report (for ``regress``) or every audit (one by one).

Run: ``python benchmarks/regress.py [--specimens N] [--samples S]`` (the issue's
figure is 200 specimens x 100 samples).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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
from tests.agents.candidates import score_shifted_run, write_candidate  # noqa: E402

# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites)
ROWS = (
    "audits one by one (run_audit)",
    "regress, 1 in-process worker",
    "regress, 2 in-process workers",
)


def _candidate(root: Path) -> CandidateCode:
    return write_candidate(root, "po_next", score_shifted_run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specimens", type=int, default=8)
    parser.add_argument("--samples", type=int, default=100)
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
        start = time.perf_counter()
        regress(runtime, selection, plan, now=datetime.now(UTC), local=True, workers=workers)
        rows.append((label, time.perf_counter() - start))
    runtime.close()
    reference = rows[0][1]
    n = len(selection.specimens)
    print(f"{n} specimens x {args.samples} samples")
    print(f"{'configuration':40} {'seconds':>8} {'specimens/min':>14} {'vs one by one':>14}")
    for name, seconds in rows:
        print(f"{name:40} {seconds:8.1f} {60 * n / seconds:14.1f} {reference / seconds:13.2f}x")


if __name__ == "__main__":
    main()
