"""A LangGraph graph built per run (``agent_spec(build)``): ``build`` is given each run's
own ``ctx``, so the chat model's client can be the run's wire client and the model is
captured at the wire — each exchange recorded with its URL, JSON body and the answer's
model. A replay never asks the model: a request the record lacks, after an intervention
on the tool result the model reads, ends the branch ``unservable`` with the server up.
A hosted alias beside a graph built per run (two capture places) is refused.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.adapters.langgraph import agent_spec
from enclave.capture import AgentCrashed, AgentSpec, Context, capture
from enclave.replay import Intervention, Strategy
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from ledger import StepKind
from tests.agents import langgraph_agents as lg
from tests.agents import langgraph_per_run_agents as pr
from tests.support.canary import scan_tree

ROOT = Path(__file__).resolve().parents[3]
SEED = 5
INPUT = {"input": "Applicant A-7 asks for a loan of 12000."}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("langgraph-per-run") / "home"))
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def stand_in() -> Iterator[None]:
    """The stand-in model server on the wire agent's port, for the whole module."""
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "local_model_server.py"), "--port", str(pr.PORT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and "serving" in server.stdout.readline()
        yield
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stdout is not None:
            server.stdout.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured(runtime: Runtime, agent: AgentSpec) -> Trajectory:
    with lg.live():
        result = capture(runtime, agent, dict(INPUT), tenant_id="acme", seed=SEED)
    opened = open_specimen(runtime, result.specimen_id, job_id="pr", lease_seconds=60, now=now())
    return opened.trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=SEED, variant="baseline", audit_time=now()
    )


def test_the_spec_declares_the_tools_of_the_graph_built_and_the_boundaries_given() -> None:
    assert {b.name for b in pr.FAKE.boundaries} == {"credit_check"}
    assert pr.FAKE.boundary("credit_check").kind is StepKind.TOOL
    assert {b.name for b in pr.WIRE.boundaries} == {"credit_check", "screening-model"}
    assert pr.WIRE.boundary("screening-model") is pr.SCREENING_MODEL


def test_the_graph_is_built_with_each_run_s_own_ctx(runtime: Runtime) -> None:
    start = len(pr.GIVEN)
    trajectory = captured(runtime, pr.FAKE)
    assert trajectory.outcome["decision"] == "REJECT"
    # the screening node read the clock through the ctx its graph was built with
    assert [s.kind for s in trajectory.steps].count("clock") == 1
    runs = [replayed(trajectory, pr.FAKE) for _ in range(2)]
    for run in runs:
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
    given = pr.GIVEN[start:]
    assert len(given) == 3 and len({id(ctx) for ctx in given}) == 3
    assert [ctx.serves_record for ctx in given] == [False, True, True]


def test_a_hosted_alias_beside_a_graph_built_per_run_is_refused() -> None:
    with pytest.raises(ValueError, match="one place"):
        agent_spec(pr.fake_screener, name="both", version="1", decision=pr.verdict, model="m")


def test_building_the_graph_crosses_no_boundary() -> None:
    def reads_the_clock(ctx: Context) -> Any:
        ctx.now()
        return pr.screener(pr.GenericFakeChatModel(messages=iter(["REJECT"])))

    with pytest.raises(ValueError, match="crosses no boundary"):
        agent_spec(reads_the_clock, name="clock", version="1", decision=pr.verdict)


def test_a_run_s_graph_with_other_tools_than_declared_is_refused(runtime: Runtime) -> None:
    from langchain_core.tools import tool

    @tool
    async def credit_check(applicant_id: str) -> pr.CreditReport:
        """Another credit check: its arguments differ."""
        raise AssertionError("never run")

    built: list[Any] = []

    def changing(ctx: Context) -> Any:
        graph = pr.screener(pr.GenericFakeChatModel(messages=iter(["REJECT"])))
        if built:  # every run after the declaration: the other tool
            graph = graph.copy(
                {
                    "nodes": {
                        **graph.nodes,
                        "tools": graph.nodes["tools"].copy({"bound": pr.ToolNode([credit_check])}),
                    }
                }
            )
        built.append(graph)
        return graph

    agent = agent_spec(changing, name="changing", version="1", decision=pr.verdict)
    with pytest.raises(AgentCrashed), lg.live():
        capture(runtime, agent, dict(INPUT), tenant_id="acme", seed=SEED)


def test_the_wire_form_records_each_exchange_with_the_model(
    runtime: Runtime, stand_in: None
) -> None:
    trajectory = captured(runtime, pr.WIRE)
    assert trajectory.outcome["decision"] == "REJECT"  # risk 0.7
    (call,) = [s for s in trajectory.steps if s.kind == "model"]
    assert call.call_id == "main/screening-model#0"
    assert call.request["method"] == "POST"
    assert call.request["url"] == f"http://127.0.0.1:{pr.PORT}/v1/chat/completions"
    assert call.request["body"]["json"]["model"] == pr.MODEL
    assert "risk 0.7" in call.request["body"]["json"]["messages"][1]["content"]
    assert call.response["body"]["json"]["model"] == pr.MODEL
    assert "authorization" not in call.request["headers"]
    run = replayed(trajectory, pr.WIRE)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    assert ("main/screening-model#0", "record") in run.served


def test_a_replay_never_asks_the_model_what_the_record_lacks(
    runtime: Runtime, stand_in: None
) -> None:
    trajectory = captured(runtime, pr.WIRE)
    digester = runtime.digests.for_tenant("acme")
    lower = Intervention(
        Strategy.REPLACE, call_id="main/credit_check#0", field="/output/risk", value=0.1
    )
    changed = apply_intervention(trajectory, lower, agent=pr.WIRE, digester=digester).trajectory
    # the server is up and would answer: only the record may, and it holds no answer
    # to the prompt the lower risk makes
    run = replayed(changed, pr.WIRE)
    assert run.failure == "unservable", run.failure_detail
    assert ("main/credit_check#0", "intervention") in run.served
    assert run.served[-1] == ("main/screening-model#0", "unservable")
    assert scan_tree(runtime.home.root, [pr.CANARY]) == {}
