"""How long a command takes before it does anything, against Python starting at all.

An embedded home holding the three reference incidents (no audits); each command is
run as its own process, as a person runs it, through the installed console script
(not a shell shim), with its output on an 80-column non-terminal (a listing of the
three incidents is then three field/value tables). The reference, ``python -c pass``,
runs in the same rounds, alternated with the commands so a busy machine slows both
alike. Per command: the median wall time and the median CPU time (user + system of the
finished child, from ``getrusage(RUSAGE_CHILDREN)``), each also as a ratio to the
reference. CPU time is what to compare across runs on a shared machine: waiting for a
core inflates wall time, not CPU time. The load average is printed before and after.
Target: ``--help`` and ``specimens list`` <= 0.25 s wall on a quiet machine.

    python benchmarks/cli.py               # the table
    python benchmarks/cli.py --rounds 31
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_SECONDS = 0.25
TARGETED = ("--help", "specimens list")
REFERENCE = "python -c pass"
# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites)
ROWS = (REFERENCE, "--version", "--help", "specimens list", "specimens list --json")


@dataclass(frozen=True)
class Timing:
    wall: float  # median seconds
    cpu: float  # median seconds, user + system


def _script() -> str:
    beside = Path(sys.executable).with_name("replay-enclave")
    found = str(beside) if beside.exists() else shutil.which("replay-enclave")
    if found is None:
        sys.exit("replay-enclave is not installed (pip install -e .)")
    return found


def _environment() -> dict[str, str]:
    """The caller's environment without enclave settings, with a fixed 80-column width
    (Rich lays a table out by ``COLUMNS``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["COLUMNS"] = "80"
    return env


def _setup(home: Path, script: str, env: dict[str, str]) -> None:
    subprocess.run([script, "init", "--home", str(home)], check=True, capture_output=True, env=env)
    code = (
        "import sys; from enclave._home import Home; from enclave._runtime import Runtime;"
        "from enclave.cli._demo import capture_incidents;"
        "rt = Runtime.open(Home.open(__import__('pathlib').Path(sys.argv[1])));"
        "capture_incidents(rt); rt.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(home)], check=True, env=env)


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the child is waited for, so its usage is in)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(rounds: int) -> dict[str, Timing]:
    script = _script()
    env = _environment()
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        home = Path(tmp) / "home"
        _setup(home, script, env)
        argvs = (
            [sys.executable, "-c", "pass"],
            [script, "--version"],
            [script, "--help"],
            [script, "specimens", "list", "--home", str(home)],
            [script, "specimens", "list", "--json", "--home", str(home)],
        )
        commands = dict(zip(ROWS, argvs, strict=True))
        for argv in commands.values():  # warm the page cache and byte-code
            _run(argv, env)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, argv in commands.items():
                wall, cpu = _run(argv, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    return {
        name: Timing(statistics.median(walls[name]), statistics.median(cpus[name]))
        for name in commands
    }


def table(timings: dict[str, Timing]) -> str:
    reference = timings[REFERENCE]
    lines = [
        f"{'command':<22} {'wall':>7} {'x ref':>6} {'CPU':>7} {'x ref':>6}  target (wall)",
        "-" * 70,
    ]
    for name, t in timings.items():
        verdict = ""
        if name in TARGETED:
            met = "ok" if t.wall <= TARGET_SECONDS else "MISSED"
            verdict = f"<= {TARGET_SECONDS:.2f} s {met}"
        lines.append(
            f"{name:<22} {t.wall * 1000:>4.0f} ms {t.wall / reference.wall:>5.2f}x "
            f"{t.cpu * 1000:>4.0f} ms {t.cpu / reference.cpu:>5.2f}x  {verdict}"
        )
    return "\n".join(lines)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    before = _load()
    timings = measure(args.rounds)
    after = _load()
    print(f"medians of {args.rounds} rounds on {os.cpu_count()} CPUs")
    print(f"load average (1/5/15 min): {before} before, {after} after")
    print(f"x ref: the ratio to {REFERENCE} in the same rounds\n")
    print(table(timings))


if __name__ == "__main__":
    main()
