"""The Agents SDK adapter with an agent's MCP servers (``Agent.mcp_servers``): each is
one MCP boundary, reached at capture (a real stdio subprocess, or an in-process server
named as its target) and served from the record at replay, where the SDK's server
object is never connected; an intervention on the MCP tool result the model reads is
audited in the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from agents.mcp import MCPServerStdio, create_static_tool_filter

from enclave import Home, Runtime
from enclave.adapters.openai_agents import agent_spec
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import openai_agents_mcp_agents as oa
from tests.support.canary import find_canaries, scan_tree

SEED = 3
LIMITS = SandboxLimits(wall_seconds=120.0)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("oa-mcp") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured_id(runtime: Runtime, agent: AgentSpec) -> str:
    with oa.live():
        return capture(runtime, agent, dict(oa.INPUT), tenant_id="acme", seed=SEED).specimen_id


def captured(runtime: Runtime, agent: AgentSpec) -> Trajectory:
    specimen = captured_id(runtime, agent)
    return open_specimen(runtime, specimen, job_id="oa", lease_seconds=60, now=now()).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=SEED, variant="baseline", audit_time=now()
    )


def markers() -> list[Path]:
    return sorted(oa.MARKERS.glob("started-*")) if oa.MARKERS.exists() else []


def clear_markers() -> None:
    for marker in markers():
        marker.unlink()


def test_each_mcp_server_is_one_boundary_and_the_mcp_sdk_a_framework() -> None:
    spec = oa.AGENT.boundary("quotes")
    assert spec.kind is StepKind.TOOL
    assert set(spec.request) == {"method", "params"}
    assert spec.json_schema is not None
    result = spec.json_schema["properties"]["result"]["properties"]
    assert result["structuredContent"]["properties"]["price"]["type"] == "number"
    assert {"mcp", "enclave.adapters.mcp"} <= set(oa.AGENT.frameworks)


def test_servers_the_adapter_cannot_route_are_refused_before_any_run() -> None:
    def spec_of(server: Any, **options: Any) -> AgentSpec:
        agent = Agent(name="a", mcp_servers=[server])
        return agent_spec(agent, name="x", version="1", model=oa.scripted, decision="d", **options)

    params = {"command": "/usr/bin/python3", "args": ["server.py"]}
    with pytest.raises(ValueError, match="may not hold"):
        spec_of(MCPServerStdio(params=params))  # named "stdio: /usr/bin/python3" by default
    with pytest.raises(ValueError, match="dynamic MCP tool filter"):
        spec_of(MCPServerStdio(name="q", params=params, tool_filter=lambda ctx, tool: True))
    static = create_static_tool_filter(allowed_tool_names=["quote"])
    assert spec_of(MCPServerStdio(name="q", params=params, tool_filter=static)).boundary("q")


@pytest.mark.parametrize("agent", [oa.IN_PROCESS, oa.AGENT], ids=["in-process", "stdio"])
def test_captured_and_replayed_with_the_server_object_never_connected(
    runtime: Runtime, agent: AgentSpec
) -> None:
    trajectories = []
    for _ in range(5):
        clear_markers()
        trajectory = captured(runtime, agent)
        assert trajectory.outcome["decision"] == "BUY"
        trajectories.append(trajectory)
        # only the stdio capture starts the subprocess, through the routed session
        assert len(markers()) == (1 if agent is oa.AGENT else 0)
    assert oa.quotes_server.session is None  # the SDK's own server object: never connected
    clear_markers()
    methods = [s.request["method"] for s in trajectories[0].steps if s.name == "quotes"]
    assert methods == ["server/discover", "tools/list", "tools/call", "tools/list"]
    for trajectory in trajectories * 4:
        run = replayed(trajectory, agent)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
    assert markers() == []
    assert oa.quotes_server.session is None


@pytest.mark.parametrize(
    ("member", "value", "label"),
    [("price", 150.0, "influential"), ("terms", "net 60", "equivalent")],
)
def test_an_audit_of_the_mcp_result_the_model_reads_in_the_sandbox(
    runtime: Runtime,
    member: str,
    value: Any,
    label: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    specimen = captured_id(runtime, oa.AGENT)
    clear_markers()
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE,
            call_id="main/quotes#2",
            field=f"/result/structuredContent/{member}",
            value=value,
        ),
        requester="test",
        samples=100,  # a categorical outcome: equivalence needs N=100
        seed=1,
        purpose="does the quote drive the purchase?",
    )
    outcome = run_audit(runtime, request, now=now(), limits=LIMITS)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == label
    assert markers() == []
    # the canaries in the prompt and in the server's result stay sealed
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), list(oa.CANARIES)) == []
    printed = capsys.readouterr()
    text = printed.out + printed.err + caplog.text
    assert find_canaries(text.encode(), list(oa.CANARIES)) == []
    assert scan_tree(runtime.home.root, list(oa.CANARIES)) == {}
