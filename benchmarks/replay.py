"""What the enclave costs a replay, against the same replay engine run bare.

Procurement reference incident (DESIGN.md), model r1 -> r2, measured in one run:

(a) per paired sample (baseline, intervened, placebo on one seed):
    *enclave*: ``run_sample_batch`` over N seeds — single-use grant, decryption, an
    isolated worker (bubblewrap/namespace, seccomp, audit hook, rlimits), each of the
    three runs in a fresh process forked from the worker's template (the agent imported
    from source in each), serving from the record, the metadata-only reduction, and the
    repeat of 5% of the seeds on a second fresh worker — divided by N;
    *bare*: ``replay_run`` three times per seed in this process over the plaintext
    trajectory (no decryption, no isolation) plus the same reduction.
(b) a whole N-sample audit: ``run_audit`` end to end (ledger request, grant, worker start,
    baseline gate, samples, placebo, verdict, signed certificate, ledger append) against
    the bare loop of N paired replays.

(c) the same audit as a person runs it — the ``replay-enclave audit`` command, its own
    process — against a plain paired sweep run as its own process: ``python
    benchmarks/replay.py --sweep`` opens the specimen and replays baseline and intervened
    on each seed in-process over plaintext (start-up, imports and decryption included).

Against their floors, measured in the same run:

(a') the enclave's paired sample against the floor of a process per run: three empty
    runs of the same worker template (fork, a one-frame reply, exit, reap:
    ``benchmarks/_fork_floor.py``) plus the three bare replays, on the one core a
    batch's runs use one after another.
(c') the audit command against the procurement score formula alone, swept over the
    same seeds for r1 and r2 as its own process (``benchmarks/_formula_sweep.py``): what
    a person could compute without the enclave at all.

(d) replay from the last cut against a full replay, on a specimen whose expensive part
    precedes the cut (``benchmarks/_cuts.py``): target >= 2x faster from the cut.

Medians over rounds, enclave and bare alternated so a busy machine slows both alike.
Targets: (a) <= 1.2x at 10,000 samples, (b) <= 3x, (c) <= 2x at 1,000 samples;
(a') <= 1.25x, (c') <= 12x.

    python benchmarks/replay.py                 # the table (N = 10,000; (c) at 1,000)
    python benchmarks/replay.py --samples 200 --rounds 3
    python benchmarks/replay.py --profile       # cProfile of the bare loop and the supervisor
    python benchmarks/replay.py --cut --samples 20 --rounds 3 [--work 150000]   # (d) only
    python benchmarks/replay.py --memory --samples 100   # a worker's memory (_worker_memory)
    python benchmarks/replay.py --demo --rounds 3   # the demo against its floor (_demo_time)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _demo_time, _worker_memory  # noqa: E402
from enclave._home import Home  # noqa: E402
from enclave._runtime import Runtime  # noqa: E402
from enclave.capture import capture, load_agent  # noqa: E402
from enclave.incidents import procurement  # noqa: E402
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit  # noqa: E402
from enclave.replay.runs import (  # noqa: E402
    apply_intervention,
    open_specimen,
    placebo_of,
    replay_run,
)
from enclave.replay.stages import (  # noqa: E402
    WORKER_PRELOAD,
    repeat_seeds,
    run_sample_batch,
    stage_sandbox,
    worker_preload,
)
from enclave.replay.worker import summarize_seed  # noqa: E402

TARGET_SAMPLE = 1.2
TARGET_AUDIT = 3.0
TARGET_COMMAND = 2.0
TARGET_FLOOR = 1.25
TARGET_FORMULA = 12.0
FLOOR_RUNS = 3000  # empty runs timed for the floor, per round
COMMAND_SAMPLES = 1000  # (c) is stated for a 1,000-sample audit
# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites);
# (d)'s are in benchmarks/_cuts.py
ROWS = (
    "(a) per paired sample",
    "(b) whole audit",
    "(c) command vs sweep",
    "per replay run",
    "(a') sample vs floor",
    "(c') command vs formula",
    "empty run (floor)",
)


def _setup(root: Path) -> tuple[Runtime, str]:
    runtime = Runtime.open(Home.init(root))
    base = procurement.BASELINE_INPUT
    inputs: dict[str, Any] = dict(base["inputs"])  # type: ignore[call-overload]
    specimen = capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=41)
    return runtime, specimen.specimen_id


def _request(specimen: str, samples: int) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="benchmark",
        requester="benchmark",
        samples=samples,
        seed=1,
        # the approval rule's substitute is the rule itself (as the procurement policy
        # declares): without the declaration a label resting on it is capped
        authoritative_substitutes=("approval-policy",),
    )


def _bare_loop(runtime: Runtime, specimen: str, now: datetime) -> Callable[[int], Any]:
    """The same engine with no enclave: plaintext trajectory in this process."""
    opened = open_specimen(runtime, specimen, job_id="bench-bare", lease_seconds=300, now=now)
    agent = load_agent(opened.record.agent_name)
    digester = runtime.digests.for_tenant(opened.record.tenant_id)
    applied = apply_intervention(
        opened.trajectory, _request(specimen, 2).intervention, agent=agent, digester=digester
    )
    variants = {
        "baseline": opened.trajectory,
        "intervened": applied.trajectory,
        "placebo": placebo_of(opened.trajectory, applied),
    }
    recorded = opened.trajectory.outcome.get("decision")

    def run(samples: int, arms: tuple[str, ...] = ("baseline", "intervened", "placebo")) -> Any:
        out = []
        for seed in range(1, samples + 1):
            runs = [
                replay_run(
                    trajectory=variants[v], agent=agent, seed=seed, variant=v, audit_time=now
                )
                for v in arms
            ]
            if len(runs) == 3:
                out.append(summarize_seed(*runs, recorded_decision=recorded))
            else:
                base, alt = (float((r.layers or {}).get("score") or 0.0) for r in runs)
                out.append(alt - base)
        return out

    return run


def _sweep(home: str, specimen: str, samples: int) -> None:
    """(c)'s reference, as its own process: a paired sweep (baseline, intervened)."""
    with Runtime.open(Home.open(Path(home))) as runtime:
        now = datetime.now(UTC) + timedelta(minutes=1)
        deltas = _bare_loop(runtime, specimen, now)(samples, ("baseline", "intervened"))
    print(statistics.fmean(deltas))


def _commands(root: Path, specimen: str, samples: int) -> tuple[float, float]:
    """Wall seconds of (the audit command, the sweep process)."""
    script = Path(sys.executable).with_name("replay-enclave")
    audit = [str(script), "audit", specimen, "--revision", "model=r2", "--samples",
             str(samples), "--seed", "1", "--purpose", "benchmark", "--json",
             "--authoritative-substitute", "approval-policy",
             "--home", str(root)]  # fmt: skip
    sweep = [sys.executable, __file__, "--sweep", str(root), specimen, str(samples)]
    walls = []
    for argv in (audit, sweep):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    return walls[0], walls[1]


def _formula(samples: int) -> float:
    """Wall seconds of (c')'s reference: the score formula swept as its own process."""
    argv = [sys.executable, str(Path(__file__).with_name("_formula_sweep.py")), str(samples)]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def empty_run(runtime: Runtime, specimen: str, now: datetime) -> float:
    """Seconds per empty run forked from the template a batch's runs fork from."""
    opened = open_specimen(runtime, specimen, job_id="bench-floor", lease_seconds=300, now=now)
    agent = load_agent(opened.record.agent_name)
    preload = (*worker_preload(WORKER_PRELOAD, agent), "benchmarks._fork_floor")
    sandbox = stage_sandbox(runtime, "auto", None)
    with sandbox.start("benchmarks._fork_floor:handle", preload=preload) as worker:
        worker.call({"runs": 30})  # the template's first forks
        start = time.perf_counter()
        worker.call({"runs": FLOOR_RUNS})
        return (time.perf_counter() - start) / FLOOR_RUNS


def _empty_run_alone() -> float:
    """An empty run's seconds, from a home of its own."""
    now = datetime.now(UTC) + timedelta(minutes=1)
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        runtime, specimen = _setup(Path(tmp) / "home")
        try:
            return empty_run(runtime, specimen, now)
        finally:
            runtime.close()


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(samples: int, rounds: int) -> dict[str, Any]:
    now = datetime.now(UTC) + timedelta(minutes=1)
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        runtime, specimen = _setup(Path(tmp) / "home")
        try:
            bare = _bare_loop(runtime, specimen, now)
            bare(5)  # warm imports and caches
            request = _request(specimen, samples)
            seeds = list(range(1, samples + 1))
            plain: list[float] = []
            batch: list[float] = []
            audit: list[float] = []
            command: list[float] = []
            sweep: list[float] = []
            formula: list[float] = []
            empty: list[float] = []
            for r in range(rounds):

                def one_batch(r: int = r) -> None:
                    result = run_sample_batch(
                        runtime,
                        request,
                        audit_id=f"au-bench-{r}",
                        job_id=f"bench-batch-{r}",
                        seeds=seeds,
                        now=now,
                    )
                    assert result.failure is None and len(result.samples) == samples

                def whole() -> None:
                    outcome = run_audit(runtime, request, now=now)
                    assert outcome.envelope is not None
                    assert outcome.classification == "influential"

                plain.append(_timed(lambda: bare(samples)))
                batch.append(_timed(one_batch))
                audit.append(_timed(whole))
                command_s, sweep_s = _commands(Path(tmp) / "home", specimen, COMMAND_SAMPLES)
                command.append(command_s)
                sweep.append(sweep_s)
                formula.append(_formula(COMMAND_SAMPLES))
                empty.append(empty_run(runtime, specimen, now))
        finally:
            runtime.close()
    medians = (statistics.median(x) for x in (plain, batch, audit, command, sweep, formula, empty))
    bare_s, batch_s, audit_s, command_s, sweep_s, formula_s, empty_s = medians
    return {
        "samples": samples,
        "rounds": rounds,
        "bare": bare_s,
        "batch": batch_s,
        "audit": audit_s,
        "command": command_s,
        "sweep": sweep_s,
        "formula": formula_s,
        "empty_run": empty_s,
    }


def _table(m: dict[str, Any]) -> str:
    n = m["samples"]
    # the floor of a process per run: three empty runs and the three bare replays
    floor = 3 * m["empty_run"] + m["bare"] / n
    rows = [
        (ROWS[0], m["batch"] / n * 1e3, m["bare"] / n * 1e3, TARGET_SAMPLE),
        (ROWS[4], m["batch"] / n * 1e3, floor * 1e3, TARGET_FLOOR),
        (ROWS[1], m["audit"] * 1e3, m["bare"] * 1e3, TARGET_AUDIT),
        (ROWS[2], m["command"] * 1e3, m["sweep"] * 1e3, TARGET_COMMAND),
        (ROWS[5], m["command"] * 1e3, m["formula"] * 1e3, TARGET_FORMULA),
    ]
    lines = [
        f"procurement model r1->r2, {n} paired samples (3 replays each), "
        f"median of {m['rounds']} rounds; (c) at {COMMAND_SAMPLES} samples",
        f"{'measure':<26}{'enclave ms':>14}{'reference':>12}{'ratio':>8}{'target':>9}  verdict",
    ]
    for label, enclave_ms, bare_ms, target in rows:
        ratio = enclave_ms / bare_ms
        verdict = "met" if ratio <= target else "MISSED"
        lines.append(
            f"{label:<26}{enclave_ms:>14.3f}{bare_ms:>12.3f}{ratio:>7.2f}x{target:>8g}x  {verdict}"
        )
    # every run is a process of its own: what one costs, worker starts included
    runs = 3 * (n + len(repeat_seeds(range(n))))
    per_run, bare_run = m["batch"] / runs * 1e3, m["bare"] / (3 * n) * 1e3
    lines.append(f"{'    ' + ROWS[3]:<26}{per_run:>14.3f}{bare_run:>12.3f}")
    lines.append(f"{'    ' + ROWS[6]:<26}{m['empty_run'] * 1e3:>14.3f}")
    return "\n".join(lines)


def _memory(samples: int) -> dict[str, int]:
    """A worker's memory while it replays ``samples`` paired samples (one worker at a
    time: the batch is not split), against a bare interpreter with its imports."""
    now = datetime.now(UTC) + timedelta(minutes=1)
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        runtime, specimen = _setup(Path(tmp) / "home")
        try:
            request = _request(specimen, samples)
            preload = worker_preload(WORKER_PRELOAD, load_agent(procurement.AGENT.name))

            def batch() -> None:
                seeds = list(range(1, samples + 1))
                result = run_sample_batch(
                    runtime, request, audit_id="au-mem", job_id="mem", seeds=seeds, now=now
                )
                assert result.failure is None and len(result.samples) == samples

            return _worker_memory.measure(batch, preload)
        finally:
            runtime.close()


def _profile(samples: int) -> None:
    now = datetime.now(UTC) + timedelta(minutes=1)
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        runtime, specimen = _setup(Path(tmp) / "home")
        try:
            bare = _bare_loop(runtime, specimen, now)
            for label, fn in (
                ("bare loop", lambda: bare(samples)),
                (
                    "run_audit (supervisor side)",
                    lambda: run_audit(runtime, _request(specimen, samples), now=now),
                ),
            ):
                profiler = cProfile.Profile()
                profiler.runcall(fn)
                print(f"--- {label}")
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
        finally:
            runtime.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sweep", nargs=3, metavar=("HOME", "SPECIMEN", "SAMPLES"))
    parser.add_argument("--cut", action="store_true", help="(d) only: from the cut vs full")
    parser.add_argument("--memory", action="store_true", help="a worker's memory only")
    parser.add_argument("--demo", action="store_true", help="the demo command only")
    parser.add_argument("--work", type=int, default=150_000, help="(d): hash rounds before the cut")
    args = parser.parse_args(argv)
    if args.cut:
        from benchmarks import _cuts

        print(_cuts.table(_cuts.measure(args.samples, args.rounds, args.work)))
        return
    if args.sweep:
        _sweep(args.sweep[0], args.sweep[1], int(args.sweep[2]))
        return
    if args.profile:
        _profile(args.samples)
        return
    if args.memory:
        print(_worker_memory.table(_memory(args.samples), args.samples))
        return
    if args.demo:
        print(_demo_time.table(_demo_time.measure(args.rounds, _empty_run_alone)))
        return
    print(_table(measure(args.samples, args.rounds)))


if __name__ == "__main__":
    main()
