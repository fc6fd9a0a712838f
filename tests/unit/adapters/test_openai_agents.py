"""The OpenAI Agents SDK adapter: agents written as the SDK documents them (a handoff, a
parallel batch of two tool calls in one model turn, a typed output), with the SDK's own
``ScriptedModel`` as the model, captured through ``agent_spec`` and replayed unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from agents import Agent, ModelSettings, WebSearchTool
from agents.items import ModelResponse
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tracing import get_trace_provider
from agents.usage import Usage

from enclave import Home, Runtime
from enclave.adapters.openai_agents import (
    ServerStateRefused,
    SilentTraceProvider,
    agent_spec,
    dump_response,
    from_object,
    load_response,
    model_request,
)
from enclave.capture import AgentCrashed, AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import (
    RunResult,
    Trajectory,
    apply_intervention,
    open_specimen,
    replay_run,
)
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import openai_agents_agents as oa
from tests.support.canary import find_canaries, scan_tree

SEED = 5
CANARIES = [oa.CANARY_PROMPT, oa.CANARY_TERMS]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("openai-agents") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured_id(runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = oa.INPUT) -> str:
    with oa.live():
        return capture(runtime, agent, dict(inputs), tenant_id="acme", seed=SEED).specimen_id


def captured(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = oa.INPUT
) -> Trajectory:
    specimen = captured_id(runtime, agent, inputs)
    return open_specimen(
        runtime, specimen, job_id="openai-agents", lease_seconds=60, now=now()
    ).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=SEED, variant="baseline", audit_time=now()
    )


def intervened(
    runtime: Runtime, trajectory: Trajectory, agent: AgentSpec, call_id: str, field: str, value: Any
) -> Trajectory:
    intervention = Intervention(Strategy.REPLACE, call_id=call_id, field=field, value=value)
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def steps(trajectory: Trajectory, kind: str) -> list[Any]:
    return [s for s in trajectory.steps if s.kind == kind]


# -- the spec the adapter derives ---------------------------------------------------------


def test_the_spec_declares_one_sealed_tool_boundary_per_function_tool() -> None:
    names = {b.name: b for b in oa.AGENT.boundaries}
    assert set(names) == {"quote", "rating"}  # the buyer's tools, reached through the handoff
    for boundary in names.values():
        assert boundary.kind is StepKind.TOOL
        assert set(boundary.request) == {"arguments"} and set(boundary.response) == {"output"}
        for rule in (*boundary.request.values(), *boundary.response.values()):
            assert rule.classification.value in {"confidential", "restricted"}
    # the quote's typed output is addressable: /output/price
    schema = names["quote"].json_schema
    assert schema is not None
    assert set(schema["properties"]["output"]["properties"]) == {"price", "terms"}
    assert oa.AGENT.inputs["input"].classification.value == "confidential"


def test_a_hosted_model_is_one_sealed_model_boundary() -> None:
    model = oa.HOSTED.boundary("gpt-4.1")
    assert model.kind is StepKind.MODEL and model.aliases == ("gpt-4.1",)
    for rule in (*model.request.values(), *model.response.values()):
        assert rule.classification.value == "confidential"


# -- normalisation --------------------------------------------------------------------------


def _request(**settings: Any) -> dict[str, Any]:
    return model_request(
        "Decide.",
        [{"role": "user", "content": "buy"}],
        ModelSettings(**settings),
        oa.buyer.tools,
        None,
        [],
    )


def test_the_per_run_prompt_cache_key_is_not_in_the_request_key() -> None:
    first = _request(extra_args={"prompt_cache_key": "agents-sdk:run:1f2e"})
    second = _request(extra_args={"prompt_cache_key": "agents-sdk:run:9a0b"})
    assert first == second == _request()
    assert _request(temperature=0.5) != first  # a real change is kept


def test_two_identical_runs_give_identical_request_keys_and_a_change_does_not(
    runtime: Runtime,
) -> None:
    one, two = captured(runtime, oa.HOSTED), captured(runtime, oa.HOSTED)
    keys = [[(s.call_id, s.request) for s in steps(t, "model")] for t in (one, two)]
    assert len(keys[0]) == 3 and keys[0] == keys[1]
    other = captured(runtime, oa.HOSTED, {"input": oa.PROMPT + " Urgent."})
    assert [s.request for s in steps(other, "model")] != [r for _, r in keys[0]]


@pytest.mark.parametrize(
    "server_state",
    [{"previous_response_id": "resp_1"}, {"conversation_id": "conv_1"}],
)
def test_a_request_that_continues_server_state_is_refused(server_state: dict[str, str]) -> None:
    with pytest.raises(ServerStateRefused):
        model_request("Decide.", "buy", ModelSettings(), [], None, [], **server_state)


def test_hosted_tools_are_refused() -> None:
    with pytest.raises(ServerStateRefused):
        model_request("Decide.", "buy", ModelSettings(), [WebSearchTool()], None, [])
    searching = Agent(name="searcher", tools=[WebSearchTool()])
    with pytest.raises(ServerStateRefused):
        agent_spec(searching, name="s", version="1", model=oa.scripted, decision="decision")


# -- the SDK's own codec --------------------------------------------------------------------


def test_a_model_response_round_trips_through_the_record() -> None:
    response = ModelResponse(
        output=[
            function_call("quote", {"supplier": "acme"}, call_id="q1"),
            function_call("rating", '{"supplier": "acme"}', call_id="r1"),  # spaced
            function_call("terms", '{ "supplier" : "acme" }', call_id="t1"),  # free-form
            assistant_message('{"decision":"BUY","supplier":"acme","price":100.0}'),
            # a real model's structured answer (llama.cpp's server indents it)
            assistant_message('{\n  "decision": "HOLD",\n  "supplier": "globex"\n}'),
        ],
        usage=Usage(requests=1, input_tokens=12, output_tokens=3, total_tokens=15),
        response_id="resp-1",
    )
    fields = dump_response(response)
    json.dumps(fields)  # JSON all the way down
    # addressable wherever the text is a layout rebuilt exactly
    assert fields["output"]["0"]["arguments"] == {"supplier": "acme"}
    assert fields["output"]["1"]["arguments"] == {"supplier": "acme"}
    assert fields["output"]["2"]["arguments"] == '{ "supplier" : "acme" }'  # kept as text
    assert fields["output"]["3"]["content"]["0"]["text"]["decision"] == "BUY"
    assert fields["output"]["4"]["content"]["0"]["text"]["decision"] == "HOLD"
    back = load_response(json.loads(json.dumps(fields)))
    assert back.output == response.output  # every text exactly as the model wrote it
    assert back.usage == response.usage and back.response_id == "resp-1"
    # a changed value is written in the layout the model used
    fields["output"]["4"]["content"]["0"]["text"]["decision"] = "BUY"
    (_, _, _, _, changed) = load_response(fields).output
    assert changed.content[0].text == '{\n  "decision": "BUY",\n  "supplier": "globex"\n}'  # type: ignore[union-attr]
    # a layout the record does not know is refused, never guessed
    fields["output"]["4"]["content"]["0"]["text_layout"] = "tabbed"
    with pytest.raises(ValueError, match="layout"):
        load_response(fields)


# -- baseline: 100 captures, 100 replays -----------------------------------------------------


@pytest.mark.parametrize("agent", [oa.AGENT, oa.HOSTED], ids=["in-process-model", "hosted"])
def test_a_handoff_and_a_parallel_batch_replay_100_times_out_of_100(
    runtime: Runtime, agent: AgentSpec
) -> None:
    orders = set()
    for _ in range(100):
        trajectory = captured(runtime, agent)
        tools = [s.name for s in trajectory.steps if s.kind == "tool"]
        assert sorted(tools) == ["quote", "rating"]
        orders.add(tuple(tools))
        assert trajectory.outcome["decision"] == "BUY"
        run = replayed(trajectory, agent)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)
        assert {call for call, how in run.served if how != "record"} == set()
        served = {call for call, _ in run.served}
        assert {"main/quote#0", "main/rating#0"} <= served
    # the world decided the batch's order: both orders were captured
    assert len(orders) == 2


def test_the_tools_of_one_turn_run_concurrently(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.HOSTED)
    kinds = [(s.kind, s.name) for s in trajectory.steps if s.kind in ("model", "tool")]
    # hand off, propose both calls, both answers, then the verdict
    assert kinds[:2] == [("model", "gpt-4.1"), ("model", "gpt-4.1")]
    assert sorted(kinds[2:4]) == [("tool", "quote"), ("tool", "rating")]
    assert kinds[4:] == [("model", "gpt-4.1")]


# -- interventions -----------------------------------------------------------------------


def test_a_tool_result_the_decision_reads_changes_it(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.AGENT)
    changed = intervened(runtime, trajectory, oa.AGENT, "main/quote#0", "/output/price", 500.0)
    run = replayed(changed, oa.AGENT)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None and run.layers["decision"] == "HOLD"
    assert ("main/quote#0", "intervention") in run.served


def test_the_model_s_structured_output_is_an_intervention_target(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.HOSTED)
    verdict = "/output/0/content/0/text/decision"
    changed = intervened(runtime, trajectory, oa.HOSTED, "main/gpt-4.1#2", verdict, "HOLD")
    run = replayed(changed, oa.HOSTED)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None and run.layers["decision"] == "HOLD"
    assert run.layers["proposal"] == {**trajectory.outcome["proposal"], "decision": "HOLD"}


def test_a_proposed_tool_call_s_argument_is_an_intervention_target(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.HOSTED)
    target = "/output/0/arguments/supplier"
    changed = intervened(runtime, trajectory, oa.HOSTED, "main/gpt-4.1#1", target, "globex")
    # the model now asks for globex's quote: a call the record does not hold is never made
    # live, the branch ends (no governed inference is declared)
    with oa.live():  # even with the world reachable, nothing may reach it
        run = replayed(changed, oa.HOSTED)
    assert run.failure == "unservable"
    assert run.layers is None


def test_a_boundary_the_adapter_does_not_know_is_crossed_through_the_run_context(
    runtime: Runtime,
) -> None:
    trajectory = captured(runtime, oa.POLICED)
    # the instructions are read on every turn: once for the batch, once for the verdict
    policies = [s.call_id for s in trajectory.steps if s.name == "policy"]
    assert policies == ["main/policy#0", "main/policy#1"]
    assert trajectory.outcome["decision"] == "BUY"
    run = replayed(trajectory, oa.POLICED)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    stricter = intervened(runtime, trajectory, oa.POLICED, "main/policy#1", "/limit", 90.0)
    run = replayed(stricter, oa.POLICED)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None and run.layers["decision"] == "HOLD"


def test_a_live_call_at_replay_aborts_the_branch(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.PEEKING)
    run = replayed(trajectory, oa.PEEKING)  # its model reads the quote service itself
    assert run.failure == "agent_error" and run.layers is None


def test_a_run_that_cannot_be_captured_faithfully_is_refused(runtime: Runtime) -> None:
    # a model that answers with server-side state: the adapter refuses it at capture
    class Continuing(ScriptedModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["previous_response_id"] = "resp_stored"
            return await super().get_response(*args, **kwargs)

    stored = agent_spec(
        oa.triage,
        name="stored",
        version="1",
        model=lambda: Continuing([]),
        hosted="gpt-4.1",
        decision="decision",
    )
    with pytest.raises(AgentCrashed):
        captured_id(runtime, stored)


def test_replay_puts_a_silent_trace_provider_in_place(runtime: Runtime) -> None:
    trajectory = captured(runtime, oa.AGENT)
    run = replayed(trajectory, oa.AGENT)
    assert run.failure is None
    provider = get_trace_provider()
    assert isinstance(provider, SilentTraceProvider)
    provider.register_processor(object())  # type: ignore[arg-type]  # refused: no exporter
    trace = provider.create_trace("run")
    assert type(trace).__name__ == "NoOpTrace"


# -- in the sandbox --------------------------------------------------------------------------
#
# The worker's template imports the SDK and the adapter once (the spec's ``frameworks``):
# each replayed run imports only the agent's module, within the default CPU budget.

LIMITS = SandboxLimits(wall_seconds=120.0)


def audited(
    runtime: Runtime, agent: AgentSpec, call: str, field: str, value: Any, samples: int
) -> Any:
    specimen = captured_id(runtime, agent)
    intervention = Intervention(Strategy.REPLACE, call_id=call, field=field, value=value)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        requester="test",
        samples=samples,
        seed=1,
        purpose="openai agents adapter",
    )
    return run_audit(runtime, request, now=now(), limits=LIMITS)


TOOL_RESULTS = [("/output/price", 500.0, "influential"), ("/output/terms", "net 60", "equivalent")]


@pytest.mark.parametrize(("field", "value", "label"), TOOL_RESULTS)
def test_an_audit_of_a_tool_result_in_the_sandbox(
    runtime: Runtime, field: str, value: Any, label: str
) -> None:
    outcome = audited(runtime, oa.AGENT, "main/quote#0", field, value, samples=100)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.classification == label


def test_an_audit_of_the_hosted_model_s_verdict_in_the_sandbox(runtime: Runtime) -> None:
    verdict = "/output/0/content/0/text/decision"
    outcome = audited(runtime, oa.HOSTED, "main/gpt-4.1#2", verdict, "HOLD", samples=20)
    assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
    assert outcome.classification == "influential"


def test_sealed_content_never_leaves_the_payload_store(
    runtime: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = "/output/0/content/0/text/decision"
    for agent, call, field, value in (
        (oa.AGENT, "main/quote#0", "/output/price", 1.0),
        (oa.HOSTED, "main/gpt-4.1#2", verdict, "HOLD"),
    ):
        outcome = audited(runtime, agent, call, field, value, samples=10)
        assert outcome.failure is None, (outcome.failure, outcome.failure_detail)
        assert outcome.envelope is not None
        assert find_canaries(json.dumps(outcome.envelope).encode(), CANARIES) == []
        assert find_canaries(json.dumps(outcome.to_dict()).encode(), CANARIES) == []
    out = capsys.readouterr()
    assert find_canaries((out.out + out.err).encode(), CANARIES) == []
    assert scan_tree(runtime.home.root, CANARIES) == {}


# -- an agent object named on the command line (``from_object``) ---------------------------


def _named(agent: Agent[Any], model: str | None = None) -> AgentSpec:
    return from_object(
        agent, name="t:agent?decision=decision", version="1", decision="decision",
        model=model, module=oa.__name__,
    )  # fmt: skip


def test_an_agent_object_carrying_its_model_runs_a_fresh_copy_of_it_each_run() -> None:
    carried = ScriptedModel([[assistant_message("x")]])
    spec = _named(oa.buyer.clone(model=carried))
    assert spec.boundaries and {b.name for b in spec.boundaries} == {"quote", "rating"}
    with pytest.raises(ValueError, match="in-process model object is agent code"):
        _named(oa.buyer.clone(model=carried), model="planner")


def test_a_hosted_model_needs_its_alias_and_handoffs_on_other_models_are_refused() -> None:
    with pytest.raises(ValueError, match="name its boundary"):
        _named(oa.buyer.clone(model="gpt-4.1"))
    assert _named(oa.buyer.clone(model="gpt-4.1"), model="planner").boundaries
    # the triage agent hands off to a buyer whose model is not the triage agent's: the
    # run's one model would stand for both
    triage = oa.triage.clone(model=ScriptedModel([[assistant_message("x")]]))
    with pytest.raises(ValueError, match="carry other models"):
        _named(triage)
    with pytest.raises(TypeError):
        _named("not an agent")  # type: ignore[arg-type]


def test_a_model_that_takes_an_argument_is_made_from_the_run_s_ctx(runtime: Runtime) -> None:
    given: list[Any] = []

    def from_ctx(ctx: Any) -> Any:
        given.append(ctx)
        return oa.scripted()

    spec = agent_spec(oa.triage, name="wire", version="1", model=from_ctx, decision="decision")
    trajectory = captured(runtime, spec)
    run = replayed(trajectory, spec)
    assert run.failure is None, run.failure_detail
    # a model made for each run from that run's ctx: the capture's and the replay's
    assert len(given) == 2 and given[0] is not given[1]
    assert all(hasattr(ctx, "acall") for ctx in given)
    # a model is captured at one place: at the wire, or at the SDK's Model interface
    with pytest.raises(ValueError, match="not also a hosted boundary"):
        agent_spec(oa.triage, name="w", version="1", model=from_ctx, hosted="m", decision="d")
