"""The LangGraph/LangChain adapter against the real framework: a ``create_agent``
agent and a hand-built ``StateGraph`` with a ``ToolNode``, written as the docs write
them (a scripted tool-calling chat model in process), are captured unchanged, replay
exactly — a parallel tool batch included — and are audited in the sandbox; a live tool
call at replay aborts the branch; sealed content stays sealed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from enclave import Home, Runtime
from enclave.adapters.langgraph import (
    NoStreaming,
    agent_spec,
    decode_response,
    decode_tool_message,
    encode_response,
    encode_tool_message,
    from_object,
    model_request,
    normalise,
)
from enclave.capture import AgentCrashed, AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import langgraph_agents as lg
from tests.agents import langgraph_per_run_agents as per_run
from tests.support.canary import find_canaries, scan_tree

SEED = 5
LIMITS = SandboxLimits(wall_seconds=120.0)
AGENTS = [lg.AGENT, lg.GRAPH_AGENT]
AGENT_IDS = ["create_agent", "state-graph"]
ALL_AGENTS = [*AGENTS, lg.HOSTED_MODEL_AGENT]
ALL_IDS = [*AGENT_IDS, "hosted-model"]


def audited(runtime: Runtime, request: AuditRequest) -> Any:
    return run_audit(runtime, request, now=now(), limits=LIMITS)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("langgraph") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured_id(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = lg.INPUT, seed: int = SEED
) -> str:
    with lg.live():
        return capture(runtime, agent, dict(inputs), tenant_id="acme", seed=seed).specimen_id


def captured(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = lg.INPUT, seed: int = SEED
) -> Trajectory:
    specimen = captured_id(runtime, agent, inputs, seed)
    return open_specimen(runtime, specimen, job_id="lg", lease_seconds=60, now=now()).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int = SEED) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="baseline", audit_time=now()
    )


def intervened(
    runtime: Runtime, trajectory: Trajectory, agent: AgentSpec, intervention: Intervention
) -> Trajectory:
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


# -- the spec derived from the graph ----------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS, ids=AGENT_IDS)
def test_each_tool_is_a_sealed_tool_boundary_with_its_schemas(agent: AgentSpec) -> None:
    assert {b.name for b in agent.boundaries} == {"quote", "rating"}
    quote_spec, rating = agent.boundary("quote"), agent.boundary("rating")
    for spec in (quote_spec, rating):
        assert spec.kind is StepKind.TOOL
        assert set(spec.request) == {"args"}
        assert set(spec.response) == {"output", "form", "status", "artifact"}
        fields = (*spec.request.values(), *spec.response.values())
        assert all(p.classification.value == "confidential" for p in fields)
    # the response schema addresses the typed return value by pointer
    assert quote_spec.json_schema is not None
    output = quote_spec.json_schema["properties"]["output"]
    assert output["properties"]["price"]["type"] == "number"
    assert rating.json_schema is not None
    assert rating.json_schema["properties"]["output"]["type"] == "number"


def test_a_graph_builder_named_on_the_command_line_is_compiled_as_its_module_would() -> None:
    """``capture module:builder`` with a ``StateGraph`` not yet compiled: the adapter
    compiles it (no checkpointer) and derives the same spec as from the compiled graph;
    a builder that does not compile gets one line naming no node."""

    def named(graph: Any) -> AgentSpec:
        return from_object(
            graph, name="t:graph?decision=decision", version="1", decision="decision",
            module=lg.__name__,
        )  # fmt: skip

    built = named(lg.graph_builder(lg.model, lg.TOOLS))
    compiled = named(lg.build_graph(lg.model, lg.TOOLS))
    assert built.boundaries == compiled.boundaries and built.boundaries
    broken = StateGraph(MessagesState)
    broken.add_node("secret_node_name", lambda state: state)
    with pytest.raises(ValueError, match="^the LangGraph StateGraph does not compile") as failed:
        named(broken)
    assert "secret_node_name" not in str(failed.value) and "\n" not in str(failed.value)
    with pytest.raises(TypeError, match="not a LangGraph graph"):
        named(object())


def test_a_change_to_a_tool_s_arguments_is_a_new_schema_version() -> None:
    from langchain_core.tools import tool

    @tool
    async def quote(supplier: str, quantity: int) -> lg.Quote:
        """A supplier's current quote for the order."""
        raise AssertionError("never run")

    changed = agent_spec(
        lg.build_graph(lg.model, [quote, lg.rating]), name="x", version="1", decision="decision"
    ).boundary("quote")
    original = lg.AGENT.boundary("quote")
    assert changed.schema_id == original.schema_id
    assert changed.schema_version != original.schema_version
    assert changed.json_schema == original.json_schema  # the same return type


def test_the_run_is_the_graph_module_s_and_the_frameworks_are_imported_once() -> None:
    assert lg.AGENT.function.__module__ == lg.__name__
    assert lg.AGENT.frameworks == (
        "langchain_core",
        "langgraph.graph",
        "langgraph.prebuilt",
        "langchain.agents",
        "enclave.adapters.langgraph",
    )


def test_what_cannot_be_routed_is_refused_with_a_one_line_error() -> None:
    with pytest.raises(TypeError, match="compiled graph"):
        agent_spec(lg.model, name="x", version="1", decision="decision")  # type: ignore[arg-type]
    # a catch-all error handler would turn a replay's refusal into a message the model reads
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(lg.TOOLS, handle_tool_errors=True))
    builder.add_edge(START, "tools")
    with pytest.raises(ValueError, match="handle_tool_errors"):
        agent_spec(builder.compile(), name="x", version="1", decision="decision")


# -- the codec and the request keys -----------------------------------------------------


def test_a_tool_message_is_rebuilt_equal_and_an_intervention_changes_only_its_member() -> None:
    message = ToolMessage(
        content=json.dumps({"supplier": "acme", "price": 100, "terms": "é"}, ensure_ascii=False),
        name="quote",
        tool_call_id="call_1",
    )
    encoded = json.loads(json.dumps(encode_tool_message(message)))  # as the record holds it
    assert encoded["form"] == "json" and encoded["output"]["price"] == 100
    assert decode_tool_message(encoded, name="quote", tool_call_id="call_1") == message
    encoded["output"]["price"] = 1000
    changed = decode_tool_message(encoded, name="quote", tool_call_id="call_9")
    assert json.loads(changed.text) == {"supplier": "acme", "price": 1000, "terms": "é"}
    assert changed.tool_call_id == "call_9"  # the call being answered, never the record's
    text = ToolMessage(content="0.9 stars", name="rating", tool_call_id="c", status="error")
    assert encode_tool_message(text)["form"] == "text"
    assert decode_tool_message(encode_tool_message(text), name="rating", tool_call_id="c") == text


def _messages(prompt: str) -> list[Any]:
    async def one() -> list[Any]:
        with lg.live():
            state = await lg.procurement.ainvoke({"messages": [HumanMessage(prompt)]})
        return [dumpd(m) for m in state["messages"]]

    return asyncio.run(one())


def test_two_identical_runs_normalise_to_one_key_and_a_real_change_does_not() -> None:
    first, second = _messages(lg.prompt()), _messages(lg.prompt())
    assert first != second  # generated message ids differ between runs
    assert normalise(first) == normalise(second)
    # which message is which survives: ids are numbered, not erased
    ids = {m["kwargs"].get("id") for m in normalise(first)}
    assert {"lc_#0", "lc_#1"} <= ids
    assert normalise(_messages(lg.prompt("PO-7732"))) != normalise(first)
    # run, checkpoint and task ids, timestamps and provider timing are out; a provider's
    # own ids are its content: kept
    volatile = {
        "id": "chatcmpl-abc",
        "run_id": "r",
        "checkpoint_id": "c",
        "task_id": "t",
        "ts": "2026-12-03T00:00:00",
        "response_metadata": {"created": 1, "total_duration": 2, "model": "m"},
        "tool_call_id": "call_abc",
    }
    assert normalise(volatile) == {
        "id": "chatcmpl-abc",
        "response_metadata": {"model": "m"},
        "tool_call_id": "call_abc",
    }


@pytest.mark.parametrize("agent", AGENTS, ids=AGENT_IDS)
def test_two_identical_captures_record_identical_tool_requests(
    runtime: Runtime, agent: AgentSpec
) -> None:
    first, second = captured(runtime, agent, seed=SEED), captured(runtime, agent, seed=SEED + 1)

    def tool_keys(trajectory: Trajectory) -> dict[str, Any]:
        return {s.call_id: s.request for s in trajectory.steps if s.kind == "tool"}

    assert tool_keys(first) == tool_keys(second)
    assert tool_keys(first)["main/quote#0"] == {"args": {"supplier": "acme"}}


# -- baseline replays -------------------------------------------------------------------


@pytest.mark.parametrize("agent", ALL_AGENTS, ids=ALL_IDS)
def test_a_parallel_batch_captured_and_replayed_100_times_reproduces_every_time(
    runtime: Runtime, agent: AgentSpec
) -> None:
    orders = set()
    for _ in range(100):
        trajectory = captured(runtime, agent)
        tools = [s.call_id for s in trajectory.steps if s.kind == "tool"]
        assert sorted(tools) == ["main/quote#0", "main/quote#1", "main/rating#0", "main/rating#1"]
        orders.add(tuple(tools))
        assert trajectory.outcome["decision"] == "BUY"
        run = replayed(trajectory, agent)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert all(how == "record" for _, how in run.served)
        # LangChain's callback manager reads LANGCHAIN_TRACING in every run: an ambient
        # read, recorded and served. The listing of the environment recorded beside it is
        # consulted at replay only for a name the capture never read: the one step unused
        assert set(run.unused) <= {"main/ambient:environ#0"}
    # the world decided the order the batches answered in
    assert len(orders) >= 2


# -- interventions ----------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS, ids=AGENT_IDS)
def test_a_tool_result_intervention_the_choice_depends_on_changes_it(
    runtime: Runtime, agent: AgentSpec
) -> None:
    trajectory = captured(runtime, agent)
    price = Intervention(Strategy.REPLACE, call_id="main/quote#0", field="/output/price", value=1e3)
    run = replayed(intervened(runtime, trajectory, agent, price), agent)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["proposal"]["supplier"] == "globex"
    assert run.layers["decision"] == "HOLD"
    # a value the tool's return type does not allow is refused before any run
    with pytest.raises(Exception, match="schema"):
        bad = Intervention(
            Strategy.REPLACE, call_id="main/quote#0", field="/output/price", value="free"
        )
        intervened(runtime, trajectory, agent, bad)


@pytest.mark.parametrize(
    ("call_id", "price", "label"),
    [("main/quote#0", 1000.0, "influential"), ("main/quote#1", 200.0, "equivalent")],
)
def test_an_audit_of_a_tool_result_in_the_sandbox(
    runtime: Runtime, call_id: str, price: float, label: str
) -> None:
    specimen = captured_id(runtime, lg.AGENT)
    intervention = Intervention(
        Strategy.REPLACE, call_id=call_id, field="/output/price", value=price
    )
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        requester="test",
        samples=100,
        seed=1,
        purpose="does the quote drive the purchase?",
    )
    outcome = audited(runtime, request)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == label


# -- the hosted model -------------------------------------------------------------------


def test_the_model_is_a_boundary_only_when_declared_hosted() -> None:
    assert not any(b.kind is StepKind.MODEL for b in lg.AGENT.boundaries)
    planner = lg.HOSTED_MODEL_AGENT.boundary("planner")
    assert planner.kind is StepKind.MODEL
    assert set(planner.request) == {"messages", "model"}
    assert set(planner.response) == {"message", "calls"}
    assert planner.json_schema is not None
    calls = planner.json_schema["properties"]["calls"]["properties"]
    assert calls["Verdict"]["properties"]["decision"]["enum"] == ["BUY", "HOLD"]
    assert calls["quote#1"]["properties"]["supplier"]["type"] == "string"
    # a text answer is addressable too
    message = planner.json_schema["properties"]["message"]["properties"]["kwargs"]
    assert message["properties"]["content"] == {"type": "string"}
    with pytest.raises(ValueError, match="taken by a tool"):
        agent_spec(lg.procurement, name="x", version="1", decision="decision", model="quote")


def test_an_ai_message_is_rebuilt_equal_and_an_intervened_call_changes_only_its_args() -> None:
    message = AIMessage(
        content="two quotes",
        tool_calls=[
            {"name": "quote", "args": {"supplier": "acme"}, "id": "call_1"},
            {"name": "quote", "args": {"supplier": "globex"}, "id": "call_2"},
        ],
        response_metadata={"model_name": "planner-1"},
    )
    encoded = json.loads(json.dumps(encode_response(message)))  # as the record holds it
    assert encoded["calls"] == {"quote": {"supplier": "acme"}, "quote#1": {"supplier": "globex"}}
    assert decode_response(encoded) == message
    encoded["calls"]["quote#1"]["supplier"] = "initech"
    changed = decode_response(encoded)
    assert changed.tool_calls[1]["args"] == {"supplier": "initech"}
    assert changed.tool_calls[0] == message.tool_calls[0]
    assert changed.content == message.content


def test_a_model_request_leaves_out_what_differs_between_processes() -> None:
    prompt = json.dumps([{"kwargs": {"content": "hi", "id": "lc_run--" + "0" * 32 + "-0"}}])
    here = model_request(prompt, "[('script', <function script at 0x7f3a2b1c>)]")
    there = model_request(prompt, "[('script', <function script at 0x55e0c4d8>)]")
    assert here == there
    assert here["model"] == "[('script', <function script>)]"
    assert model_request(prompt, "[('temperature', 0.2)]") != model_request(
        prompt, "[('temperature', 0.7)]"
    )


def test_two_identical_captures_record_identical_model_requests(runtime: Runtime) -> None:
    first = captured(runtime, lg.HOSTED_MODEL_AGENT, seed=SEED)
    second = captured(runtime, lg.HOSTED_MODEL_AGENT, seed=SEED + 1)
    changed = captured(runtime, lg.HOSTED_MODEL_AGENT, {"input": lg.prompt("PO-1")})
    requests = [
        [s.request for s in t.steps if s.name == "planner"] for t in (first, second, changed)
    ]
    assert len(requests[0]) == 3
    assert requests[0] == requests[1]
    assert requests[2][0] != requests[0][0]


def test_an_intervention_on_the_hosted_model_s_typed_output(runtime: Runtime) -> None:
    agent = lg.HOSTED_MODEL_AGENT
    trajectory = captured(runtime, agent)
    last = [s for s in trajectory.steps if s.name == "planner"][-1]
    assert last.response["calls"]["Verdict"]["decision"] == "BUY"
    hold = Intervention(
        Strategy.REPLACE, call_id=last.call_id, field="/calls/Verdict/decision", value="HOLD"
    )
    run = replayed(intervened(runtime, trajectory, agent, hold), agent)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["decision"] == "HOLD"
    assert run.layers["proposal"] == {**trajectory.outcome["proposal"], "decision": "HOLD"}
    assert (last.call_id, "intervention") in run.served
    # the tool answers before it were the record's
    assert {c for c, how in run.served if how == "record"} >= {"main/quote#0", "main/rating#1"}
    with pytest.raises(Exception, match="schema"):
        sell = Intervention(
            Strategy.REPLACE, call_id=last.call_id, field="/calls/Verdict/decision", value="SELL"
        )
        intervened(runtime, trajectory, agent, sell)


def test_a_proposal_the_record_cannot_answer_is_unservable_and_names_the_call(
    runtime: Runtime,
) -> None:
    agent = lg.HOSTED_MODEL_AGENT
    trajectory = captured(runtime, agent)
    other = Intervention(
        Strategy.REPLACE, call_id="main/planner#0", field="/calls/quote/supplier", value="initech"
    )
    run = replayed(intervened(runtime, trajectory, agent, other), agent)
    # the model now asks for initech's quote: never made live, the branch ends there. The
    # call is named (its batch sibling, unchanged, was served from the record)
    assert run.failure == "unservable"
    assert run.layers is None
    assert ("main/planner#0", "intervention") in run.served
    assert ("main/quote#0", "unservable") in run.served
    assert ("main/quote#1", "record") in run.served


def test_an_audit_of_the_hosted_model_s_typed_output_in_the_sandbox(runtime: Runtime) -> None:
    specimen = captured_id(runtime, lg.HOSTED_MODEL_AGENT)
    hold = Intervention(
        Strategy.REPLACE, call_id="main/planner#2", field="/calls/Verdict/decision", value="HOLD"
    )
    request = AuditRequest(
        specimen_id=specimen,
        intervention=hold,
        requester="test",
        samples=20,
        seed=1,
        purpose="does the model's verdict drive the decision?",
    )
    outcome = audited(runtime, request)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == "influential"


def test_a_streamed_model_call_is_refused_with_a_clear_error(runtime: Runtime) -> None:
    # the capture names the error's class only (its text could carry content)
    with lg.live(), pytest.raises(AgentCrashed, match=NoStreaming.__name__):
        capture(runtime, lg.STREAMING_AGENT, dict(lg.INPUT), tenant_id="acme", seed=SEED)


# -- a thread's prior state ------------------------------------------------------------


def _checkpoints(thread: str) -> int:
    return sum(1 for _ in lg.SAVER.list({"configurable": {"thread_id": thread}}))


def test_a_thread_s_prior_state_is_an_input_replayed_from_a_fresh_saver_100_times(
    runtime: Runtime,
) -> None:
    for n in range(100):
        thread = f"thread-{n}"
        asyncio.run(lg.earlier_turn(thread, "Note for this thread: blocked:acme"))
        trajectory = captured(runtime, lg.THREAD_AGENT, {**lg.INPUT, "thread": thread})
        reads = [s for s in trajectory.steps if s.name == "thread-state"]
        assert [(s.kind, s.request) for s in reads] == [("context", {"thread": thread})]
        # the earlier turn blocked acme: the decision is the prior state's
        assert trajectory.outcome["proposal"]["supplier"] == "globex"
        # the capture-time saver moves on (another turn blocks globex instead): a replay
        # that read it would decide otherwise
        asyncio.run(lg.earlier_turn(thread, "Note for this thread: blocked:globex"))
        written = _checkpoints(thread)
        run = replayed(trajectory, lg.THREAD_AGENT)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert _checkpoints(thread) == written  # nor is it written
    # a new thread has no prior state: recorded as such
    trajectory = captured(runtime, lg.THREAD_AGENT, {**lg.INPUT, "thread": "new"})
    assert trajectory.outcome["proposal"]["supplier"] == "acme"
    assert replayed(trajectory, lg.THREAD_AGENT).failure is None


def test_a_checkpointer_and_a_thread_go_together() -> None:
    with pytest.raises(ValueError, match="thread="):
        agent_spec(lg.threaded_procurement, name="x", version="1", decision="decision")
    with pytest.raises(ValueError, match="checkpointer"):
        agent_spec(lg.procurement, name="x", version="1", decision="decision", thread="t")


# -- a retriever ------------------------------------------------------------------------


def test_a_retriever_tool_declared_a_retrieval_is_a_retrieval_boundary(runtime: Runtime) -> None:
    agent = lg.RETRIEVAL_AGENT
    assert agent.boundary("search_policy").kind is StepKind.RETRIEVAL
    trajectory = captured(runtime, agent)
    (step,) = [s for s in trajectory.steps if s.name == "search_policy"]
    assert step.kind == "retrieval"
    assert step.request == {"args": {"query": "acme"}}
    # the documents in LangChain's codec, beside the text the model reads
    documents = step.response["artifact"]["documents"]
    assert [d["kwargs"]["metadata"]["source"] for d in documents] == ["p-1", "p-2"]
    assert trajectory.outcome["decision"] == "BUY"
    run = replayed(trajectory, agent)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    # what the policy says drives the decision
    suspended = Intervention(
        Strategy.REPLACE, call_id=step.call_id, field="/output", value="acme: suspended"
    )
    run = replayed(intervened(runtime, trajectory, agent, suspended), agent)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None and run.layers["decision"] == "HOLD"
    with pytest.raises(ValueError, match="name no tool"):
        agent_spec(lg.procurement, name="x", version="1", decision="d", retrievals=("nope",))


# -- replay never goes live -------------------------------------------------------------


def test_a_live_tool_call_at_replay_aborts_the_branch(runtime: Runtime) -> None:
    # a hand-written tool node calls its tools itself: live at capture...
    trajectory = captured(runtime, lg.DIRECT_AGENT)
    assert trajectory.outcome["decision"] == "BUY"
    assert not [s for s in trajectory.steps if s.kind == "tool"]
    # ...and at replay the live world is closed: the branch aborts
    run = replayed(trajectory, lg.DIRECT_AGENT)
    assert run.failure == "agent_error"
    assert run.layers is None


# -- sealed content ---------------------------------------------------------------------


@pytest.mark.parametrize("agent", ALL_AGENTS, ids=ALL_IDS)
def test_sealed_content_never_leaves_the_payload_store(
    runtime: Runtime,
    agent: AgentSpec,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    specimen = captured_id(runtime, agent)
    call_id, field, value = (
        ("main/planner#2", "/calls/Verdict/decision", "HOLD")
        if agent is lg.HOSTED_MODEL_AGENT
        else ("main/quote#1", "/output/price", 150.0)
    )
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REPLACE, call_id=call_id, field=field, value=value),
        requester="test",
        samples=10,
        seed=1,
        purpose="canary sweep",
    )
    outcome = audited(runtime, request)
    assert outcome.failure is None, outcome.failure
    assert outcome.envelope is not None
    assert find_canaries(json.dumps(outcome.envelope).encode(), list(lg.CANARIES)) == []
    printed = capsys.readouterr()
    assert (
        find_canaries((printed.out + printed.err + caplog.text).encode(), list(lg.CANARIES)) == []
    )
    assert scan_tree(runtime.home.root, list(lg.CANARIES)) == {}


# -- no egress --------------------------------------------------------------------------


@pytest.fixture
def tracing_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A LangSmith endpoint on this machine, with tracing switched on by environment:
    every request it receives is listed."""
    import http.server
    import threading

    received: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            received.append(self.path)
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2-test-placeholder")
    monkeypatch.setenv("LANGSMITH_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("agent", [*AGENTS, per_run.FAKE], ids=[*AGENT_IDS, "built-per-run"])
def test_langsmith_tracing_switched_on_by_environment_sends_nothing(
    runtime: Runtime, agent: AgentSpec, tracing_endpoint: list[str]
) -> None:
    from langchain_core.tracers.langchain import wait_for_all_tracers

    trajectory = captured(runtime, agent)
    run = replayed(trajectory, agent)
    wait_for_all_tracers()
    assert run.failure is None, run.failure_detail
    assert tracing_endpoint == []


# -- the hosted example: ChatOpenAI against a real local server ---------------------------


def test_a_chat_openai_model_declared_hosted_is_served_with_its_server_gone(
    runtime: Runtime, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import socket
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(root / "examples" / "local_model_server.py"), "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and "serving" in server.stdout.readline()
        monkeypatch.setenv("LOCAL_MODEL_URL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.syspath_prepend(str(root / "examples"))
        hosted = importlib.import_module("langgraph_hosted_agent").HOSTED
        # the provider's package is a declared framework: imported once per worker
        assert "langchain_openai" in hosted.frameworks
        result = capture(
            runtime, hosted, {"input": "applicant risk 0.7"}, tenant_id="acme", seed=SEED
        )
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stdout is not None:
            server.stdout.close()
    opened = open_specimen(runtime, result.specimen_id, job_id="lg", lease_seconds=60, now=now())
    trajectory = opened.trajectory
    assert trajectory.outcome["decision"] == "REJECT"
    assert [s.call_id for s in trajectory.steps if s.kind == "model"] == ["main/screener#0"]
    run = replayed(trajectory, hosted)  # the server is gone: only the record can answer
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    assert ("main/screener#0", "record") in run.served
    # the model's text answer, intervened on, is the decision's
    approve = Intervention(
        Strategy.REPLACE,
        call_id="main/screener#0",
        field="/message/kwargs/content",
        value="APPROVE",
    )
    run = replayed(intervened(runtime, trajectory, hosted, approve), hosted)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None and run.layers["decision"] == "APPROVE"
