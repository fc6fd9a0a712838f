"""How long a command takes before it does anything, against Python starting at all.

An embedded home holding the three reference incidents (no audits); each command is
run as its own process, as a person runs it, through the installed console script
(not a shell shim). The reference, ``python -c pass``, runs in the same rounds,
alternated with the commands so a busy machine slows both alike. Medians over rounds.
Target: ``--help`` and ``specimens list`` <= 0.25 s wall.

    python benchmarks/cli.py               # the table
    python benchmarks/cli.py --rounds 31
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 0.25


def _script() -> str:
    beside = Path(sys.executable).with_name("replay-enclave")
    found = str(beside) if beside.exists() else shutil.which("replay-enclave")
    if found is None:
        sys.exit("replay-enclave is not installed (pip install -e .)")
    return found


def _setup(home: Path, script: str) -> None:
    subprocess.run([script, "init", "--home", str(home)], check=True, capture_output=True)
    code = (
        "import sys; from enclave._home import Home; from enclave._runtime import Runtime;"
        "from enclave.cli._demo import capture_incidents;"
        "rt = Runtime.open(Home.open(__import__('pathlib').Path(sys.argv[1])));"
        "capture_incidents(rt); rt.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(home)], check=True)


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(rounds: int) -> dict[str, float]:
    script = _script()
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        home = Path(tmp) / "home"
        _setup(home, script)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--version": [script, "--version"],
            "--help": [script, "--help"],
            "specimens list": [script, "specimens", "list", "--home", str(home)],
            "specimens list --json": [script, "specimens", "list", "--json", "--home", str(home)],
        }
        for argv in commands.values():  # warm the page cache and byte-code
            _wall(argv)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, argv in commands.items():
                times[name].append(_wall(argv))
    return {name: statistics.median(values) for name, values in times.items()}


def table(medians: dict[str, float]) -> str:
    reference = medians["python -c pass"]
    lines = [
        f"{'command':<24} {'median wall':>12} {'x python -c pass':>17} {'target':>10}",
        "-" * 66,
    ]
    for name, seconds in medians.items():
        targeted = name in ("--help", "specimens list")
        verdict = ("ok" if seconds <= TARGET_SECONDS else "MISSED") if targeted else ""
        target = f"<= {TARGET_SECONDS:.2f} s" if targeted else ""
        lines.append(
            f"{name:<24} {seconds * 1000:>9.0f} ms {seconds / reference:>16.2f}x "
            f"{target:>10} {verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    print(table(measure(args.rounds)))


if __name__ == "__main__":
    main()
