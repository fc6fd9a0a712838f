"""Verifying a certificate bundle offline: CPU per bundle, in process and as a command.

Target (certificate v3): verifying one bundle offline costs at most 50 ms of CPU. The
bundles are the demo's five, exported from a fresh home in the same run. References,
measured in the same run: steps 1–4 alone on the same envelopes (what verifying the
certificate costs before any proof), and a bare interpreter start (``python -c pass``)
for the two whole-process rows.

    python -m benchmarks.bundle [--samples K] [--processes P]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger.certificates import keyid_of, load_public_key_pem, verify_bundle, verify_envelope
from ledger.certificates.tlog import NoteVerifier

TARGET_MS = 50.0
ROWS = (
    "steps 1-4 on the envelope (reference)",
    "bundle: all seven steps",
    "python -c pass, whole process (reference)",
    "verify command on a bundle, whole process",
    "examples/verify_bundle.py, whole process",
)
_CLI = "from enclave.cli import main; main()"
_SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "verify_bundle.py"


def _cli(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CLI, *args, "--home", str(home)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _cpu_ms(fn: Callable[[int], object], samples: int) -> float:
    times = []
    for k in range(samples):
        start = time.process_time()
        fn(k)
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def _child_cpu_ms(argvs: list[list[str]]) -> float:
    """Median user + system CPU of each command run as its own process."""
    times = []
    for argv in argvs:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times) * 1000


def _measure(home: Path, folder: Path, samples: int, processes: int) -> list[float]:
    files = sorted(folder.glob("*.bundle.json"))
    bundles: list[dict[str, Any]] = [json.loads(p.read_text()) for p in files]
    issuer_pem = home / "keys" / "signing-key.pem.pub"
    issuer = load_public_key_pem(issuer_pem.read_bytes())
    log_text = _cli(home, "ledger", "checkpoint", "--public-key").strip()
    log_key = NoteVerifier.parse(log_text)
    keys = {keyid_of(issuer): issuer}

    def envelope_only(k: int) -> object:
        return verify_envelope(bundles[k % len(bundles)]["envelope"], keys)

    def whole(k: int) -> object:
        report = verify_bundle(bundles[k % len(bundles)], public_key=issuer, log_key=log_key)
        assert report.ok
        return report

    def runs(make: Callable[[Path], list[str]]) -> list[list[str]]:
        return [make(files[k % len(files)]) for k in range(processes)]

    command = [sys.executable, "-c", _CLI, "verify", "--public-key", str(issuer_pem)]
    return [
        _cpu_ms(envelope_only, samples),
        _cpu_ms(whole, samples),
        _child_cpu_ms(runs(lambda _: [sys.executable, "-c", "pass"])),
        _child_cpu_ms(runs(lambda f: [*command, str(f), "--log-key", log_text])),
        _child_cpu_ms(
            runs(lambda f: [sys.executable, str(_SCRIPT), str(f), str(issuer_pem), log_text])
        ),  # noqa: E501
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--processes", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        home, folder = Path(tmp) / "home", Path(tmp) / "exported"
        _cli(home, "demo", "--json")
        _cli(home, "certificates", "export", str(folder))
        ms = _measure(home, folder, args.samples, args.processes)
    print(
        f"the demo's 5 certificate bundles; CPU medians of {args.samples} in-process "
        f"verifications and {args.processes} processes"
    )
    print(f"{'measure':<44} {'CPU ms':>8} {'x reference':>12} {'target':>8}")
    for index, (name, cpu) in enumerate(zip(ROWS, ms, strict=True)):
        reference = ms[0] if index < 2 else ms[2]
        target = ("met" if cpu <= TARGET_MS else "MISSED") if index == 1 else ""
        print(f"{name:<44} {cpu:8.2f} {cpu / reference:12.2f} {target:>8}")


if __name__ == "__main__":
    main()
