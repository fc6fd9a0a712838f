"""(d) Replay from the last cut against a full replay (``docs/cuts.md``).

The specimen: an agent whose expensive part precedes its cut — a lookup, then ``rounds``
rounds of SHA-256 over the answer inside ``ctx.cut("before-authority", ...)`` — and
after it a jitter draw and a policy decision. The intervention (the policy's decision)
lies after the cut, so the same request runs either way; only ``from_cut`` differs.

Measured in one run, alternating full and from-cut so a busy machine slows both alike:

* a whole audit (``run_audit``: gate, N paired samples, placebo, certificate), wall time
  (the sandboxed workers are not this process's reaped children, so their CPU time is
  not visible from here: wall time, median over alternated rounds);
* one replayed run in this process (``replay_run``), the engine alone.

Target: from the cut >= 2x faster than in full, on the whole audit. The speed-up grows
with the work before the cut (``--work``) against the audit's fixed cost (worker starts,
one fresh process per replayed run).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks._cut_agent import CUT, HEAVY
from enclave._home import Home
from enclave._runtime import Runtime
from enclave.capture import capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import open_specimen, replay_run

TARGET_SPEEDUP = 2.0
# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites)
ROWS = ("(d) audit, wall", "(d) one run in-process")


def _flip(recorded: str) -> Intervention:
    """The policy's decision replaced by the other one."""
    other = "LOW" if recorded == "HIGH" else "HIGH"
    return Intervention(Strategy.REPLACE, call_id="main/decide#0", field="/decision", value=other)


def _timed(fn: Callable[[], Any]) -> float:
    wall = time.perf_counter()
    fn()
    return time.perf_counter() - wall


def measure(samples: int, rounds: int, work: int) -> dict[str, Any]:
    now = datetime.now(UTC) + timedelta(minutes=1)
    out: dict[str, list[float]] = {k: [] for k in ("full", "cut", "run", "run_cut")}
    labels: set[tuple[str, str]] = set()
    with tempfile.TemporaryDirectory(prefix="cut-bench-") as tmp:
        runtime = Runtime.open(Home.init(Path(tmp) / "home"))
        try:
            specimen = capture(
                runtime, HEAVY, {"key": "K-1", "rounds": work}, tenant_id="acme", seed=3
            ).specimen_id
            trajectory = open_specimen(
                runtime, specimen, job_id="bench", lease_seconds=300, now=now
            ).trajectory
            decided = next(s for s in trajectory.steps if s.name == "decide")
            intervention = _flip(str(decided.response["decision"]))

            def audit(from_cut: str | None) -> None:
                request = AuditRequest(
                    specimen_id=specimen,
                    intervention=intervention,
                    purpose="benchmark",
                    requester="benchmark",
                    samples=samples,
                    from_cut=from_cut,
                )
                outcome = run_audit(runtime, request, now=now)
                assert outcome.envelope is not None, outcome.failure
                labels.add((str(from_cut), outcome.classification))

            def one(from_cut: str | None) -> None:
                run = replay_run(
                    trajectory=trajectory,
                    agent=HEAVY,
                    seed=4,
                    variant="baseline",
                    audit_time=now,
                    from_cut=from_cut,
                )
                assert run.failure is None

            for _ in range(rounds):
                out["full"].append(_timed(lambda: audit(None)))
                out["cut"].append(_timed(lambda: audit(CUT)))
                out["run"].append(_timed(lambda: one(None)))
                out["run_cut"].append(_timed(lambda: one(CUT)))
        finally:
            runtime.close()
    classifications = {c for _, c in labels}
    assert len(classifications) == 1, "from the cut and in full must classify alike"
    medians = {k: statistics.median(v) for k, v in out.items()}
    return {
        "samples": samples,
        "rounds": rounds,
        "work": work,
        "classification": classifications.pop(),
        **medians,
    }


def table(m: dict[str, Any]) -> str:
    lines = [
        f"(d) replay from the last cut vs full: {m['work']} hash rounds before the cut, "
        f"{m['samples']}-sample audit, median of {m['rounds']} rounds "
        f"(both classified {m['classification']})",
        f"{'measure':<24}{'full s':>10}{'from cut s':>12}{'speed-up':>10}{'target':>9}  verdict",
    ]
    rows = (
        (ROWS[0], m["full"], m["cut"], TARGET_SPEEDUP),
        (ROWS[1], m["run"], m["run_cut"], None),
    )
    for label, full, cut, target in rows:
        ratio = full / cut
        verdict = "" if target is None else ("met" if ratio >= target else "MISSED")
        shown = "" if target is None else f"{target:.1f}x"
        lines.append(f"{label:<24}{full:>10.3f}{cut:>12.3f}{ratio:>9.2f}x{shown:>9}  {verdict}")
    return "\n".join(lines)
