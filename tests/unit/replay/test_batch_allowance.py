"""The inference caps are the audit's, and the service runs an audit's sample batches at
once: each batch may spend only its seeds' share of what the preparation left under the
tightest grant's caps, so batches together never pass a cap, however they interleave."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from enclave.replay import AuditRequest, InferenceCaps, InferenceGrant, Intervention, Strategy
from enclave.replay.inference import batch_allowance


def request(samples: int, *caps: InferenceCaps) -> AuditRequest:
    return AuditRequest(
        specimen_id="sp-x",
        intervention=Intervention(Strategy.REPLACE, call_id="main/risk#0", field="/r", value=1),
        requester="test",
        purpose="caps",
        samples=samples,
        inference=tuple(
            InferenceGrant(boundary=f"model-{i}", endpoint="local", model="m", caps=c)
            for i, c in enumerate(caps)
        ),
    )


CAPS = InferenceCaps(calls=100, input_tokens=10_000, output_tokens=5_000, wall_seconds=60)
TIGHT = InferenceCaps(calls=10, input_tokens=20_000, output_tokens=1_000, wall_seconds=600)
NOTHING = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0}


def test_one_batch_of_every_seed_may_spend_what_the_preparation_left() -> None:
    spent = {"calls": 4, "input_tokens": 1_000, "output_tokens": 200, "seconds": 6.0}
    assert batch_allowance(request(100, CAPS), spent, 100) == {
        "calls": 96,
        "input_tokens": 9_000,
        "output_tokens": 4_800,
        "seconds": 54.0,
    }


def test_the_tightest_grant_of_each_kind_decides() -> None:
    allowed = batch_allowance(request(10, CAPS, TIGHT), NOTHING, 5)
    assert allowed == {"calls": 5, "input_tokens": 5_000, "output_tokens": 500, "seconds": 30.0}


@given(
    samples=st.integers(2, 500),
    cuts=st.lists(st.integers(1, 499), max_size=8),
    spent_calls=st.integers(0, 120),
)
def test_batches_together_never_pass_a_cap(samples: int, cuts: list[int], spent_calls: int) -> None:
    bounds = sorted({c for c in cuts if c < samples} | {0, samples})
    sizes = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    spent = {**NOTHING, "calls": spent_calls}
    shares = [batch_allowance(request(samples, CAPS, TIGHT), spent, n) for n in sizes]
    assert sum(s["calls"] for s in shares) <= max(0, 10 - spent_calls)
    assert sum(s["output_tokens"] for s in shares) <= 1_000
    assert sum(s["seconds"] for s in shares) <= 60 + 1e-9
