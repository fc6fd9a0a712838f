"""A batch's seeds on every core: contiguous shards, each replayed by a fresh worker of
its own, all at once (with the repeat worker), the samples joined in seed order.

A shard's worker is started and checked as any worker is, with scratch, namespaces and
pid space of its own, so no run of one shard sees a run of another; every run is still
a fresh fork of its worker's template. The CPU budget is a worker's, and each shard's
worker has all of it: every worker pays its template's start (an agent framework's
import: seconds of CPU for some) before its first run, so a share in proportion to its
seeds could run out where one worker replaying them all did not, and how the seeds were
split would decide the audit. A batch that asks a governed
endpoint is not split (its broker counts caps in one place, one ask at a time).
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["MIN_SHARD_SEEDS", "in_parallel", "locked", "split_seeds"]

# below this many seeds a shard saves less than its worker's start costs
MIN_SHARD_SEEDS = 50
T = TypeVar("T")


def split_seeds(seeds: Sequence[int], shards: int | None) -> list[list[int]]:
    """``seeds`` in contiguous shards of near-equal size: ``shards`` of them (``None``:
    one per core this process may run on), fewer where a shard would hold fewer than
    :data:`MIN_SHARD_SEEDS`; always at least one."""
    wanted = len(os.sched_getaffinity(0)) if shards is None else shards
    count = max(1, min(wanted, len(seeds) // MIN_SHARD_SEEDS))
    size, extra = divmod(len(seeds), count)
    parts, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        parts.append([int(seed) for seed in seeds[start:end]])
        start = end
    return parts


def locked(progress: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """``progress`` callable from several threads at once."""
    if progress is None:
        return None
    lock = threading.Lock()
    report = progress

    def advance(samples: int) -> None:
        with lock:
            report(samples)

    return advance


def in_parallel(tasks: Sequence[Callable[[], T]], *, at_once: bool = True) -> list[T]:
    """Each task's result, in task order: run at once, one thread each (or one after
    another without ``at_once``). The first failure in task order is raised, once
    every task has ended."""
    if not at_once or len(tasks) == 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=len(tasks), thread_name_prefix="shard") as pool:
        # each task in a copy of the caller's context: the zygotes it activated
        futures = [pool.submit(contextvars.copy_context().run, task) for task in tasks]
    return [future.result() for future in futures]
