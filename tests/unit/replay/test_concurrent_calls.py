"""Concurrent calls (engine invariant 10): an asynchronous agent's parallel tool batch,
captured with the world's own latencies deciding the order answers arrive in, replays
exactly; agent scopes of concurrent tasks never mix; a counterfactual keeps the recorded
latencies, so the order alone never makes an intervention look influential.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import AgentSpec, BoundarySpec, Context, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from tests.agents import concurrent_agents as ca
from tests.support.canary import find_canaries, scan_tree

SEED = 5


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("concurrent") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any]) -> Trajectory:
    with ca.live():
        specimen = capture(runtime, agent, dict(inputs), tenant_id="acme", seed=SEED).specimen_id
    return open_specimen(
        runtime, specimen, job_id="concurrent", lease_seconds=60, now=now()
    ).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int = SEED) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="baseline", audit_time=now()
    )


def calls(trajectory: Trajectory, name: str) -> list[tuple[str, str, str]]:
    """(agent, call id, supplier) of each recorded call of ``name``, in record order."""
    return [
        (s.agent, s.call_id, str(s.request["supplier"])) for s in trajectory.steps if s.name == name
    ]


# -- a parallel batch captured and replayed 100 times -----------------------------------


def test_a_parallel_batch_captured_and_replayed_100_times_reproduces_every_time(
    runtime: Runtime,
) -> None:
    orders = set()
    for _ in range(100):
        trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)
        orders.add(tuple(trajectory.outcome["proposal"]["arrivals"]))
        run = replayed(trajectory, ca.BATCH_AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert all(how == "record" for _, how in run.served)
        assert run.unused == ()
    # the world decided the order: most captures answered in an order of their own
    assert len(orders) >= 50


def test_a_call_takes_its_id_when_it_starts_not_when_it_finishes(runtime: Runtime) -> None:
    # gather starts the tools in the listed order; their answers arrive in any order
    for _ in range(10):
        trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)
        quotes = calls(trajectory, "quote")
        assert sorted(call_id for _, call_id, _ in quotes) == [
            f"main/quote#{k}" for k in range(len(ca.SUPPLIERS))
        ]
        for _, call_id, supplier in quotes:
            assert call_id == f"main/quote#{ca.SUPPLIERS.index(supplier)}"


def test_agent_scopes_of_concurrent_tasks_never_mix(runtime: Runtime) -> None:
    for _ in range(10):
        trajectory = captured(runtime, ca.SCOPED_AGENT, ca.SCOPED_INPUT)
        for name in ("quote", "rating"):
            for agent, call_id, supplier in calls(trajectory, name):
                assert agent == supplier and call_id == f"{supplier}/{name}#0"
        arrivals = trajectory.outcome["proposal"]["arrivals"]
        assert len(arrivals) == 4 and all(e.split(":")[1] == e.split(":")[2] for e in arrivals)
        run = replayed(trajectory, ca.SCOPED_AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)


# -- divergence inside a batch fails closed, promptly -----------------------------------


def _variant(agent: AgentSpec, function: Any) -> AgentSpec:
    return dataclasses.replace(agent, function=function)


def test_a_batch_call_the_record_does_not_hold_diverges(runtime: Runtime) -> None:
    trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)

    async def other_supplier(ctx: Context, inputs: Mapping[str, Any]) -> Any:
        return await ca.BATCH_AGENT.function(ctx, {"suppliers": ["acme", "hooli"]})

    run = replayed(trajectory, _variant(ca.BATCH_AGENT, other_supplier))
    assert run.failure == "divergence" and run.layers is None


def test_a_batch_missing_a_recorded_call_diverges_instead_of_waiting_forever(
    runtime: Runtime,
) -> None:
    trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)
    quote: BoundarySpec = ca.QUOTE

    async def quotes_only(ctx: Context, inputs: Mapping[str, Any]) -> Any:
        import asyncio

        async def one(supplier: str) -> Any:
            return await ctx.acall(quote, {"supplier": supplier}, live=ca._quote)

        await asyncio.gather(*(one(s) for s in inputs["suppliers"]))
        return {"score": 0.0, "decision": "HOLD", "proposal": {}, "evidence": []}

    run = replayed(trajectory, _variant(ca.BATCH_AGENT, quotes_only))
    # the ratings answered between the quotes at capture never come: the quote waiting
    # for its turn gives up (a rating answered before at least one quote in nearly every
    # capture; when none did, the run ends with the recorded calls unused instead)
    assert run.failure == "divergence" or (run.failure is None and run.unused)


# -- interventions inside a batch -------------------------------------------------------


def intervened(runtime: Runtime, trajectory: Trajectory, call_id: str, price: float) -> Trajectory:
    intervention = Intervention(Strategy.REPLACE, call_id=call_id, field="/price", value=price)
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(
        trajectory, intervention, agent=ca.BATCH_AGENT, digester=digester
    ).trajectory


def test_an_intervention_keeps_the_recorded_arrival_order(runtime: Runtime) -> None:
    for _ in range(20):
        trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)
        last = f"main/quote#{len(ca.SUPPLIERS) - 1}"  # the worst supplier, a little dearer
        run = replayed(intervened(runtime, trajectory, last, 200.0), ca.BATCH_AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers is not None
        assert run.layers["proposal"] == trajectory.outcome["proposal"]  # the order included
        assert ("main/quote#3", "intervention") in run.served


def test_an_intervention_the_choice_depends_on_changes_it(runtime: Runtime) -> None:
    trajectory = captured(runtime, ca.BATCH_AGENT, ca.BATCH_INPUT)
    assert trajectory.outcome["proposal"]["supplier"] == "acme"
    run = replayed(intervened(runtime, trajectory, "main/quote#0", 1000.0), ca.BATCH_AGENT)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["proposal"]["supplier"] == "globex"
    assert run.layers["proposal"]["arrivals"] == trajectory.outcome["proposal"]["arrivals"]


@pytest.mark.parametrize(
    ("call_id", "price", "label"),
    [("main/quote#0", 1000.0, "influential"), ("main/quote#3", 200.0, "equivalent")],
)
def test_an_audit_of_a_batch_in_the_sandbox(
    runtime: Runtime, call_id: str, price: float, label: str
) -> None:
    with ca.live():
        specimen = capture(
            runtime, ca.BATCH_AGENT, dict(ca.BATCH_INPUT), tenant_id="acme", seed=SEED
        ).specimen_id
    intervention = Intervention(Strategy.REPLACE, call_id=call_id, field="/price", value=price)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        requester="test",
        samples=100,  # an interval narrow enough to establish equivalence
        seed=1,
        purpose="concurrent batch",
    )
    outcome = run_audit(runtime, request, now=now(), limits=SandboxLimits(wall_seconds=30.0))
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == label


def test_a_live_call_that_failed_gives_its_id_back(runtime: Runtime) -> None:
    attempts: list[str] = []

    async def flaky(request: Mapping[str, Any]) -> dict[str, Any]:
        attempts.append(str(request["supplier"]))
        if len(attempts) == 1:
            raise ConnectionError("the first attempt fails")
        return {"price": 101, "terms": ca.CANARY}

    async def retries(ctx: Context, inputs: Mapping[str, Any]) -> Any:
        for _ in range(2):
            try:
                price = (await ctx.acall(ca.QUOTE, {"supplier": "acme"}, live=flaky))["price"]
                break
            except ConnectionError:
                continue
        return {"score": 0.5, "decision": "BUY", "proposal": {"price": price}, "evidence": []}

    agent = _variant(ca.BATCH_AGENT, retries)
    trajectory = captured(runtime, agent, ca.BATCH_INPUT)
    assert attempts == ["acme", "acme"]
    # nothing was recorded for the failed attempt: the retry is the boundary's first call
    assert calls(trajectory, "quote") == [("main", "main/quote#0", "acme")]
    run = replayed(trajectory, agent)
    assert run.failure is None and run.served == (("main/quote#0", "record"),)


def test_sealed_content_of_concurrent_calls_never_leaves_the_payload_store(
    runtime: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    with ca.live():
        specimen = capture(
            runtime, ca.BATCH_AGENT, dict(ca.BATCH_INPUT), tenant_id="acme", seed=SEED
        ).specimen_id
    intervention = Intervention(Strategy.REPLACE, call_id="main/quote#1", field="/price", value=1)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        requester="test",
        samples=10,
        seed=1,
        purpose="concurrent canary",
    )
    outcome = run_audit(runtime, request, now=now(), limits=SandboxLimits(wall_seconds=30.0))
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), [ca.CANARY]) == []
    captured_output = capsys.readouterr()
    assert ca.CANARY not in captured_output.out + captured_output.err
    assert scan_tree(runtime.home.root, [ca.CANARY]) == {}
