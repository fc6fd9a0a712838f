"""The MCP adapter against the real SDK: an agent that uses ``mcp.ClientSession`` is
captured against a real server (in process through the SDK's direct dispatcher, and a
stdio subprocess) and replays from the record with no server at all; an intervention on
an MCP tool result is audited in the sandbox; no server process starts at replay; sealed
content stays sealed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from enclave import Home, Runtime
from enclave.adapters.mcp import mcp_request, normalise_params, server_boundary
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import mcp_agents as ma
from tests.support.canary import find_canaries, scan_tree

SEED = 5
LIMITS = SandboxLimits(wall_seconds=120.0)
ROOT = str(Path(__file__).resolve().parents[3])


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("mcp") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured_id(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = ma.INPUT, seed: int = SEED
) -> str:
    with ma.live():
        return capture(runtime, agent, dict(inputs), tenant_id="acme", seed=seed).specimen_id


def opened(runtime: Runtime, specimen: str) -> Trajectory:
    return open_specimen(runtime, specimen, job_id="mcp", lease_seconds=60, now=now()).trajectory


def captured(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = ma.INPUT, seed: int = SEED
) -> Trajectory:
    return opened(runtime, captured_id(runtime, agent, inputs, seed))


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int = SEED) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="baseline", audit_time=now()
    )


def requests_of(trajectory: Trajectory) -> list[Any]:
    return [s.request for s in trajectory.steps if s.name == "quotes"]


def markers() -> list[Path]:
    return sorted(ma.MARKERS.glob("started-*")) if ma.MARKERS.exists() else []


def clear_markers() -> None:
    for marker in markers():
        marker.unlink()


def audit(runtime: Runtime, specimen: str, call_id: str, value: float, samples: int) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id=call_id, field="/result/structuredContent/price", value=value
        ),
        requester="test",
        samples=samples,
        seed=1,
        purpose="does the quote drive the purchase?",
    )
    return run_audit(runtime, request, now=now(), limits=LIMITS)


# -- the boundary -----------------------------------------------------------------------


def test_a_server_is_one_sealed_boundary_whose_structured_results_are_addressable() -> None:
    spec = ma.QUOTES
    assert spec.kind is StepKind.TOOL
    assert set(spec.request) == {"method", "params"}
    assert set(spec.response) == {"result", "error"}
    assert spec.request["params"].classification.value == "confidential"
    assert all(p.classification.value == "confidential" for p in spec.response.values())
    assert spec.json_schema is not None
    result = spec.json_schema["properties"]["result"]["properties"]
    assert result["structuredContent"]["properties"]["price"]["type"] == "number"
    # a document server is a retrieval; other kinds are not an MCP server
    assert server_boundary("docs", kind=StepKind.RETRIEVAL).kind is StepKind.RETRIEVAL
    with pytest.raises(ValueError, match="TOOL or a RETRIEVAL"):
        server_boundary("x", kind=StepKind.MODEL)
    # one member two tools declare differently has no single schema
    one = {"type": "object", "properties": {"price": {"type": "number"}}}
    other = {"type": "object", "properties": {"price": {"type": "string"}}}
    with pytest.raises(ValueError, match="differently"):
        server_boundary("x", output_schemas={"a": one, "b": other})


# -- request keys -----------------------------------------------------------------------


def test_stamps_trace_context_and_progress_tokens_are_no_part_of_a_key() -> None:
    stamped = {
        "name": "quote",
        "arguments": {"supplier": "acme"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "progressToken": 7,
        },
    }
    bare = {"name": "quote", "arguments": {"supplier": "acme"}}
    assert mcp_request("tools/call", stamped) == {"method": "tools/call", "params": bare}
    # the caller's own _meta is content: kept
    own = {**bare, "_meta": {"tenant": "acme", "traceparent": "x"}}
    assert normalise_params(own) == {**bare, "_meta": {"tenant": "acme"}}
    assert mcp_request("tools/list", None) == {"method": "tools/list", "params": None}
    with pytest.raises(ValueError, match="non-empty string"):
        mcp_request("", None)


def test_two_identical_runs_record_identical_keys_and_a_real_change_does_not(
    runtime: Runtime,
) -> None:
    first = captured(runtime, ma.AGENT, seed=SEED)
    second = captured(runtime, ma.AGENT, seed=SEED + 1)
    changed = captured(runtime, ma.AGENT, {**ma.INPUT, "quantity": 400})
    keys = [requests_of(t) for t in (first, second, changed)]
    # the handshake, then each call in order, the hidden tools/list included
    methods = [r["method"] for r in keys[0]]
    assert methods == ["server/discover", *["tools/call", "tools/list"], *["tools/call"] * 3]
    assert keys[0] == keys[1]
    assert keys[2] != keys[0]
    assert keys[2][1]["params"]["arguments"]["quantity"] == 400


# -- baseline replays -------------------------------------------------------------------


def test_captured_and_replayed_100_times_against_an_in_process_server(runtime: Runtime) -> None:
    for _ in range(100):
        trajectory = captured(runtime, ma.AGENT)
        assert trajectory.outcome["decision"] == "BUY"
        run = replayed(trajectory, ma.AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert all(how == "record" for _, how in run.served)
        assert run.unused == ()


def test_a_stdio_server_runs_at_capture_and_never_at_replay(runtime: Runtime) -> None:
    trajectories = []
    for _ in range(20):
        clear_markers()
        trajectories.append(captured(runtime, ma.STDIO_AGENT))
        assert len(markers()) == 1  # the capture started the real server
    clear_markers()
    for trajectory in trajectories * 5:  # 100 replays
        run = replayed(trajectory, ma.STDIO_AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert run.unused == ()
    assert markers() == []  # no replay started it
    # the subprocess and the in-process server answer alike: one record, either server
    assert requests_of(trajectories[0]) == requests_of(captured(runtime, ma.AGENT))


def test_a_request_the_record_never_saw_ends_the_branch(runtime: Runtime) -> None:
    trajectory = captured(runtime, ma.AGENT)
    run = replayed(trajectory, ma.EXTRA_CALL_AGENT)
    assert run.failure is not None
    assert run.layers is None


def test_a_server_s_json_rpc_error_is_recorded_and_raised_again(runtime: Runtime) -> None:
    trajectory = captured(runtime, ma.ERROR_AGENT)
    (error,) = [s for s in trajectory.steps if s.name == "quotes" and "error" in s.response]
    assert trajectory.outcome["decision"] == f"error {error.response['error']['code']}"
    run = replayed(trajectory, ma.ERROR_AGENT)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    # the agent was handed the SDK's own error at capture (its code is in the outcome)
    assert error.response["error"]["code"] != 0
    assert MCPError(error.response["error"]["code"], "x").code == error.response["error"]["code"]


_CAPTURE_IN_A_FRESH_PROCESS = """
import sys
from pathlib import Path
from enclave import Home, Runtime
from enclave.capture import capture
from tests.agents import mcp_agents as ma

runtime = Runtime.open(Home.open(Path(sys.argv[1])))
with ma.live():
    print(capture(runtime, ma.AGENT, dict(ma.INPUT), tenant_id="acme", seed=5).specimen_id)
runtime.close()
"""


def test_a_capture_in_a_cold_process_replays_in_a_warm_one(tmp_path: Path) -> None:
    # the SDK completes some of its types on first use, reading the environment: in a
    # cold capture that would be an ambient read a warm replay never makes
    home = tmp_path / "home"
    Runtime.open(Home.init(home)).close()
    done = subprocess.run(
        [sys.executable, "-c", _CAPTURE_IN_A_FRESH_PROCESS, str(home)],
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    runtime = Runtime.open(Home.open(home))
    try:
        trajectory = opened(runtime, done.stdout.strip().splitlines()[-1])
    finally:
        runtime.close()
    assert not [s for s in trajectory.steps if s.name.startswith("ambient:")]
    run = replayed(trajectory, ma.AGENT)
    assert run.failure is None, run.failure_detail
    assert run.unused == ()


# -- interventions ----------------------------------------------------------------------


def test_an_intervened_tool_result_reaches_the_decision(runtime: Runtime) -> None:
    trajectory = captured(runtime, ma.AGENT)
    call = next(s for s in trajectory.steps if s.call_id == "main/quotes#1")
    assert call.request["params"]["arguments"]["supplier"] == "acme"
    price = Intervention(
        Strategy.REPLACE,
        call_id="main/quotes#1",
        field="/result/structuredContent/price",
        value=1000.0,
    )
    digester = runtime.digests.for_tenant("acme")
    changed = apply_intervention(trajectory, price, agent=ma.AGENT, digester=digester).trajectory
    run = replayed(changed, ma.AGENT)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["proposal"]["supplier"] == "globex"
    assert run.layers["decision"] == "HOLD"
    # a value the tool's output schema does not allow is refused before any run
    with pytest.raises(Exception, match="schema"):
        apply_intervention(
            trajectory,
            Intervention(
                Strategy.REPLACE,
                call_id="main/quotes#1",
                field="/result/structuredContent/price",
                value="free",
            ),
            agent=ma.AGENT,
            digester=digester,
        )


@pytest.mark.parametrize(
    ("call_id", "price", "label"),
    [("main/quotes#1", 1000.0, "influential"), ("main/quotes#4", 200.0, "equivalent")],
)
def test_an_audit_of_an_mcp_tool_result_in_the_sandbox(
    runtime: Runtime, call_id: str, price: float, label: str
) -> None:
    outcome = audit(runtime, captured_id(runtime, ma.AGENT), call_id, price, samples=100)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == label


def test_an_audit_of_a_stdio_agent_starts_no_server_in_the_sandbox(runtime: Runtime) -> None:
    specimen = captured_id(runtime, ma.STDIO_AGENT)
    clear_markers()
    outcome = audit(runtime, specimen, "main/quotes#1", 1000.0, samples=20)
    # a spawned server would have contaminated the branch (and left a marker)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == "influential"
    assert markers() == []


# -- sealed content ---------------------------------------------------------------------


@pytest.mark.parametrize("agent", [ma.AGENT, ma.STDIO_AGENT], ids=["in-process", "stdio"])
def test_sealed_content_never_leaves_the_payload_store(
    runtime: Runtime,
    agent: AgentSpec,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    specimen = captured_id(runtime, agent)
    outcome = audit(runtime, specimen, "main/quotes#4", 150.0, samples=10)
    assert outcome.failure is None, outcome.failure
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), list(ma.CANARIES)) == []
    printed = capsys.readouterr()
    text = printed.out + printed.err + caplog.text
    assert find_canaries(text.encode(), list(ma.CANARIES)) == []
    assert scan_tree(runtime.home.root, list(ma.CANARIES)) == {}
