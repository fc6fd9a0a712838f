"""A sample's arms run in an order drawn afresh for each sample. A run can read its place
among its worker's runs (pids advance by one per run); in a fixed order that place would
name its arm, and agent code could behave as the baseline in the placebo arm and
otherwise in the intervened one, whatever the evidence said."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from enclave.replay.worker import _entry


def test_the_arms_run_in_every_order_and_are_summarised_in_arm_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[tuple[str, int]] = []

    def replay(fresh: Any, variant: str, seed: int) -> tuple[str, int]:
        ran.append((variant, seed))
        return (variant, seed)

    monkeypatch.setattr(_entry, "_replay", replay)
    orders = set()
    for seed in range(300):
        before = len(ran)
        assert _entry._paired(None, seed) == [(arm, seed) for arm in _entry.ARMS]
        orders.add(tuple(variant for variant, _ in ran[before:]))
    # each of the six orders: the first arm run is no more often the baseline than not
    assert orders == set(itertools.permutations(_entry.ARMS))
    firsts = [ran[i][0] for i in range(0, len(ran), 3)]
    assert all(40 < firsts.count(arm) < 160 for arm in _entry.ARMS)
