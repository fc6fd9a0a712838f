"""Merkle proofs of the ledger at scale: roots, inclusion and consistency proofs of a
SQLite ledger of ``--entries`` entries (default 1,000,000), produced from the stored
tree and verified offline.

Target (certificate v3): produce and verify each proof in at most 1 ms at 1,000,000
entries. The reference, measured in the same run, is one entry read by primary key
through the same ledger (``Ledger.entry``): the least a proof served from the database
could cost.

    python -m benchmarks.merkle [--entries N] [--samples K]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ledger import Ledger, entry_leaf_hash
from ledger.certificates.tlog import verify_consistency, verify_inclusion

_BATCH = 20_000
TARGET_MS = 1.0
ROWS = (
    "entry read by primary key (reference)",
    "tree root",
    "inclusion proof: produce",
    "inclusion proof: verify",
    "consistency proof: produce",
    "consistency proof: verify",
)


def _median_ms(fn: Callable[[int], object], samples: int) -> float:
    times = []
    for k in range(samples):
        start = time.perf_counter()
        fn(k)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _fill(led: Ledger, entries: int) -> float:
    start = time.perf_counter()
    for first in range(0, entries, _BATCH):
        count = min(_BATCH, entries - first)
        led.append_many([("bench.note", f"s-{i % 100}", {"i": first + i}) for i in range(count)])
    return time.perf_counter() - start


def _measure(led: Ledger, samples: int, rng: random.Random) -> list[tuple[str, float]]:
    n, root = led.tree_root()
    indexes = [rng.randrange(n) for _ in range(samples)]
    olds = [rng.randrange(1, n) for _ in range(samples)]
    roots = {old: led.tree_root(old)[1] for old in olds}
    leaves = {index: entry_leaf_hash(led.entry(index)) for index in indexes}
    paths = {index: led.prove_inclusion(index, n) for index in indexes}
    proofs = {old: led.prove_consistency(old, n) for old in olds}

    def check_inclusion(k: int) -> None:
        i = indexes[k]
        verify_inclusion(leaves[i], i, n, paths[i], root)

    def check_consistency(k: int) -> None:
        old = olds[k]
        verify_consistency(old, n, roots[old], root, proofs[old])

    timed: list[Callable[[int], object]] = [
        lambda k: led.entry(indexes[k]),
        lambda k: led.tree_root(olds[k]),
        lambda k: led.prove_inclusion(indexes[k], n),
        check_inclusion,
        lambda k: led.prove_consistency(olds[k], n),
        check_consistency,
    ]
    return [(name, _median_ms(fn, samples)) for name, fn in zip(ROWS, timed, strict=True)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        led = Ledger.open(url, clock=lambda: "2026-12-06T00:00:00Z")
        try:
            led.migrate()
            filled = _fill(led, args.entries)
            rows = _measure(led, args.samples, random.Random(7))
        finally:
            led.close()
    reference = rows[0][1]
    print(
        f"ledger of {args.entries:,} entries (filled in {filled:.0f} s), medians of {args.samples}"
    )
    print(f"{'measure':<40} {'ms':>8} {'x entry read':>13} {'target':>8}")
    for name, ms in rows:
        proof = "proof" in name
        target = ("met" if ms <= TARGET_MS else "MISSED") if proof else ""
        print(f"{name:<40} {ms:8.3f} {ms / reference:13.2f} {target:>8}")


if __name__ == "__main__":
    main()
