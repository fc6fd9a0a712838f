"""(c)'s floor, as its own process: the procurement incident's score formula (DESIGN.md)
for r1 and r2 on seeds 1..N, nothing else — no specimen, no engine, no project import.

    python benchmarks/_formula_sweep.py 1000
"""

from __future__ import annotations

import random
import statistics
import sys

MODEL = {"r1": 0.020, "r2": -0.018}
TEMPLATE_C1, CONFIDENCE, THRESHOLD = 0.012, 0.70, 0.55


def score(revision: str, seed: int) -> float:
    jitter = random.Random(seed).uniform(-0.028, 0.028)
    return 0.500 + MODEL[revision] + TEMPLATE_C1 + 0.20 * (CONFIDENCE - 0.50) + jitter


def main(samples: int) -> None:
    deltas, flips = [], 0
    for seed in range(1, samples + 1):
        before, after = score("r1", seed), score("r2", seed)
        deltas.append(after - before)
        flips += (before >= THRESHOLD) != (after >= THRESHOLD)
    print(statistics.fmean(deltas), flips / samples)


if __name__ == "__main__":
    main(int(sys.argv[1]))
