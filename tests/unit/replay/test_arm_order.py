"""A sample's arms run in an order drawn afresh for each sample. A run can read its place
among its worker's runs (pids advance by one per run); in a fixed order that place would
name its arm, and agent code could behave as the baseline in the placebo arm and
otherwise in the intervened one, whatever the evidence said."""

from __future__ import annotations

import itertools
from collections import Counter

from enclave.replay.worker import ARMS, arm_order


def test_the_arms_run_in_every_order_alike() -> None:
    drawn = [tuple(arm_order()) for _ in range(600)]
    assert set(drawn) == set(itertools.permutations(ARMS))
    # the first run is no more often one arm than another
    firsts = Counter(order[0] for order in drawn)
    assert all(120 < firsts[arm] < 280 for arm in ARMS)
