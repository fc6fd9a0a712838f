"""The pydantic-ai adapter against the real framework: an agent written as its docs
write them (``FunctionModel`` standing in for a hosted model) is captured unchanged,
replays exactly — a parallel tool batch included — and is audited in the sandbox; its
model, declared hosted, is a boundary whose typed output an intervention can change; a
live model call at replay aborts the branch; sealed content stays sealed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic_ai import Agent, NativeOutput, capture_run_messages
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart

from enclave import Home, Runtime
from enclave.adapters.pydantic_ai import agent_spec, decode_response, encode_response, normalise
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from enclave.sandbox import SandboxLimits
from ledger import StepKind
from tests.agents import pydantic_ai_agents as pa
from tests.support.canary import find_canaries, scan_tree

SEED = 5
# the default budget: the worker's template imports pydantic-ai once (the spec's
# ``frameworks``), so each run pays only for the agent's own module
LIMITS = SandboxLimits(wall_seconds=120.0)


def audited(runtime: Runtime, request: AuditRequest) -> Any:
    return run_audit(runtime, request, now=now(), limits=LIMITS)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("pydantic-ai") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def captured_id(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = pa.INPUT, seed: int = SEED
) -> str:
    with pa.live():
        return capture(runtime, agent, dict(inputs), tenant_id="acme", seed=seed).specimen_id


def captured(
    runtime: Runtime, agent: AgentSpec, inputs: Mapping[str, Any] = pa.INPUT, seed: int = SEED
) -> Trajectory:
    specimen = captured_id(runtime, agent, inputs, seed)
    return open_specimen(runtime, specimen, job_id="pyd", lease_seconds=60, now=now()).trajectory


def replayed(trajectory: Trajectory, agent: AgentSpec, seed: int = SEED) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=agent, seed=seed, variant="baseline", audit_time=now()
    )


def intervened(
    runtime: Runtime, trajectory: Trajectory, agent: AgentSpec, intervention: Intervention
) -> Trajectory:
    digester = runtime.digests.for_tenant("acme")
    return apply_intervention(trajectory, intervention, agent=agent, digester=digester).trajectory


def steps_of(trajectory: Trajectory, name: str) -> list[Any]:
    return [s for s in trajectory.steps if s.name == name]


# -- the spec derived from the agent ----------------------------------------------------


def test_each_function_tool_is_a_sealed_tool_boundary_with_its_schemas() -> None:
    quote_spec, rating = (pa.AGENT.boundary(n) for n in ("quote", "rating"))
    assert {b.name for b in pa.AGENT.boundaries} == {"quote", "rating"}
    for spec in (quote_spec, rating):
        assert spec.kind is StepKind.TOOL
        assert set(spec.request) == {"args"} and set(spec.response) == {"output"}
        assert all(p.classification.value == "confidential" for p in spec.request.values())
        assert all(p.classification.value == "confidential" for p in spec.response.values())
    # the response schema addresses the typed return value by pointer
    assert quote_spec.json_schema is not None
    output = quote_spec.json_schema["properties"]["output"]
    assert output["properties"]["price"]["type"] == "number"
    assert rating.json_schema is not None
    assert rating.json_schema["properties"]["output"]["type"] == "number"
    # the arguments' schema is the tool definition's: a change to it is a new schema version
    other = Agent(pa.FunctionModel(pa.procurement_script), output_type=pa.Verdict)

    @other.tool_plain
    async def quote(supplier: str, quantity: int) -> pa.Quote:
        raise AssertionError("never run")

    changed = agent_spec(other, name="x", version="1", decision="decision").boundary("quote")
    assert changed.schema_id == quote_spec.schema_id
    assert changed.schema_version != quote_spec.schema_version
    assert changed.json_schema == quote_spec.json_schema  # the same return type


def test_the_run_is_the_agent_module_s_so_its_code_is_the_specimen_s() -> None:
    # where replay imports the spec from, and whose files the code identity hashes; the
    # framework and the adapter are imported once by the worker's template
    assert pa.AGENT.function.__module__ == pa.__name__
    assert pa.AGENT.frameworks == ("pydantic_ai", "enclave.adapters.pydantic_ai")


def test_an_agent_without_a_score_is_captured_with_a_decision_alone(runtime: Runtime) -> None:
    categorical = pa.CATEGORICAL
    assert categorical.score_bounds is None
    trajectory = captured(runtime, categorical)
    assert "score" not in trajectory.outcome
    assert trajectory.outcome["decision"] == "BUY"
    run = replayed(trajectory, categorical)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)


def test_the_model_is_a_boundary_only_when_declared_hosted() -> None:
    assert not any(b.kind is StepKind.MODEL for b in pa.AGENT.boundaries)
    planner = pa.HOSTED_MODEL_AGENT.boundary("planner")
    assert planner.kind is StepKind.MODEL
    assert set(planner.request) == {"messages", "settings", "parameters"}
    assert set(planner.response) == {"message", "calls"}
    assert planner.json_schema is not None
    output = planner.json_schema["properties"]["calls"]["properties"]["final_result"]
    assert output["properties"]["decision"]["enum"] == ["BUY", "HOLD"]


def test_a_model_that_does_not_run_in_process_must_be_declared_a_boundary() -> None:
    hosted = pa.build(pa.ProviderLikeModel())
    with pytest.raises(ValueError, match="declared a boundary"):
        agent_spec(hosted, name="x", version="1", decision="decision")
    assert agent_spec(hosted, name="x", version="1", decision="decision", model="m").boundary("m")


# -- the framework's codec and the request keys -----------------------------------------


def test_a_model_response_is_rebuilt_equal_and_an_intervened_call_changes_only_its_args() -> None:
    response = ModelResponse(
        parts=[
            TextPart("two quotes"),
            ToolCallPart("quote", {"supplier": "acme"}, tool_call_id="call_1"),
            ToolCallPart("quote", '{"supplier": "globex"}', tool_call_id="call_2"),
        ],
        model_name="planner-1",
    )
    encoded = json.loads(json.dumps(encode_response(response)))  # as the record holds it
    assert encoded["calls"] == {"quote": {"supplier": "acme"}, "quote#1": {"supplier": "globex"}}
    assert decode_response(encoded) == response  # the provider's JSON text kept verbatim
    encoded["calls"]["quote#1"]["supplier"] = "initech"
    changed = decode_response(encoded)
    assert isinstance(changed.parts[2], ToolCallPart)
    assert changed.parts[2].args_as_dict() == {"supplier": "initech"}
    assert changed.parts[:2] == response.parts[:2]


def test_a_structured_text_answer_is_addressable_as_the_final_result() -> None:
    # the provider's structured-output mode (``NativeOutput``): the typed answer is JSON
    # text, as a real model writes it (llama.cpp's server indents it)
    text = '{\n  "decision": "HOLD",\n  "supplier": "acme"\n}'
    response = ModelResponse(parts=[TextPart(text)], model_name="local-model")
    encoded = json.loads(json.dumps(encode_response(response)))
    assert encoded["calls"] == {"final_result": {"decision": "HOLD", "supplier": "acme"}}
    assert decode_response(encoded) == response  # the model's text exactly
    encoded["calls"]["final_result"]["decision"] = "BUY"
    (part,) = decode_response(encoded).parts
    assert isinstance(part, TextPart)
    assert json.loads(part.content) == {"decision": "BUY", "supplier": "acme"}
    # words are words: a text that is no JSON object has no final result
    for words in ("no order today", "[1, 2]", "{not json"):
        plain = encode_response(ModelResponse(parts=[TextPart(words)]))
        assert plain["calls"] == {}
    # the output type's schema is declared where the output is structured text
    native = Agent(pa.FunctionModel(pa.procurement_script), output_type=NativeOutput(pa.Verdict))
    spec = agent_spec(native, name="x", version="1", decision="decision", model="planner")
    schema = spec.boundary("planner").json_schema
    assert schema is not None
    assert "decision" in schema["properties"]["calls"]["properties"]["final_result"]["properties"]


def _messages(prompt: str) -> list[Any]:
    async def one() -> list[Any]:
        with capture_run_messages() as messages, pa.live():
            await pa.procurement.run(prompt, deps=pa.Deps("us"))
        return messages

    return ModelMessagesTypeAdapter.dump_python(asyncio.run(one()), mode="json")


def test_two_identical_runs_normalise_to_one_key_and_a_real_change_does_not() -> None:
    first, second = _messages(pa.prompt()), _messages(pa.prompt())
    assert first != second  # timestamps, run ids and generated tool-call ids differ
    assert normalise(first) == normalise(second)
    # which return answers which call survives: ids are numbered, not erased
    ids = {p.get("tool_call_id") for m in normalise(first) for p in m["parts"]}
    assert {"pyd_ai_#0", "pyd_ai_#1", "pyd_ai_#2", "pyd_ai_#3"} <= ids
    assert normalise(_messages(pa.prompt("PO-7732"))) != normalise(first)
    # a provider's own ids are its content: kept
    provider = [{"parts": [{"tool_call_id": "call_abc", "timestamp": "t"}], "run_id": "r"}]
    assert normalise(provider) == [{"parts": [{"tool_call_id": "call_abc"}]}]


def test_two_identical_captures_record_identical_model_requests(runtime: Runtime) -> None:
    first = captured(runtime, pa.HOSTED_MODEL_AGENT, seed=SEED)
    second = captured(runtime, pa.HOSTED_MODEL_AGENT, seed=SEED + 1)
    changed = captured(runtime, pa.HOSTED_MODEL_AGENT, {**pa.INPUT, "input": pa.prompt("PO-1")})
    requests = [[s.request for s in steps_of(t, "planner")] for t in (first, second, changed)]
    assert len(requests[0]) == 3
    assert requests[0] == requests[1]
    assert requests[2][0] != requests[0][0]


# -- baseline replays -------------------------------------------------------------------


@pytest.mark.parametrize("agent", [pa.AGENT, pa.HOSTED_MODEL_AGENT], ids=["in-process", "hosted"])
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
        assert run.unused == ()
    # the world decided the order the batches answered in
    assert len(orders) >= 2


def test_generated_ids_and_the_clock_are_served_whatever_the_sample_seed(
    runtime: Runtime,
) -> None:
    # a sample's seed changes the ids the framework draws (uuid4: ``pyd_ai_<hex>``) and
    # its run ids (uuid7); neither is part of a request, so every seed replays
    trajectory = captured(runtime, pa.AGENT)
    for seed in range(SEED, SEED + 5):
        run = replayed(trajectory, pa.AGENT, seed=seed)
        assert run.failure is None, run.failure_detail
        assert run.layers == recorded_layers(trajectory.steps)


# -- interventions ----------------------------------------------------------------------


def test_a_tool_result_intervention_the_choice_depends_on_changes_it(runtime: Runtime) -> None:
    trajectory = captured(runtime, pa.AGENT)
    price = Intervention(Strategy.REPLACE, call_id="main/quote#0", field="/output/price", value=1e3)
    run = replayed(intervened(runtime, trajectory, pa.AGENT, price), pa.AGENT)
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["proposal"]["supplier"] == "globex"
    assert run.layers["decision"] == "HOLD"


@pytest.mark.parametrize(
    ("call_id", "price", "label"),
    [("main/quote#0", 1000.0, "influential"), ("main/quote#1", 200.0, "equivalent")],
)
def test_an_audit_of_a_tool_result_in_the_sandbox(
    runtime: Runtime, call_id: str, price: float, label: str
) -> None:
    specimen = captured_id(runtime, pa.AGENT)
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


def test_an_intervention_on_the_hosted_model_s_typed_output(runtime: Runtime) -> None:
    trajectory = captured(runtime, pa.HOSTED_MODEL_AGENT)
    last = steps_of(trajectory, "planner")[-1]
    assert last.response["calls"]["final_result"]["decision"] == "BUY"
    hold = Intervention(
        Strategy.REPLACE, call_id=last.call_id, field="/calls/final_result/decision", value="HOLD"
    )
    run = replayed(
        intervened(runtime, trajectory, pa.HOSTED_MODEL_AGENT, hold), pa.HOSTED_MODEL_AGENT
    )
    assert run.failure is None, run.failure_detail
    assert run.layers is not None
    assert run.layers["decision"] == "HOLD"
    assert run.layers["proposal"] == {**trajectory.outcome["proposal"], "decision": "HOLD"}
    assert (last.call_id, "intervention") in run.served
    # a value the output type does not allow is refused before any run
    with pytest.raises(Exception, match="schema"):
        intervened(
            runtime,
            trajectory,
            pa.HOSTED_MODEL_AGENT,
            Intervention(
                Strategy.REPLACE,
                call_id=last.call_id,
                field="/calls/final_result/decision",
                value="SELL",
            ),
        )


def test_an_audit_of_the_hosted_model_s_typed_output_in_the_sandbox(runtime: Runtime) -> None:
    specimen = captured_id(runtime, pa.HOSTED_MODEL_AGENT)
    hold = Intervention(
        Strategy.REPLACE,
        call_id="main/planner#2",
        field="/calls/final_result/decision",
        value="HOLD",
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


# -- replay never goes live -------------------------------------------------------------


def test_a_live_model_call_at_replay_aborts_the_branch(runtime: Runtime) -> None:
    # the same run with a provider's model in place: allowed to go live at capture...
    with pa.procurement.override(model=pa.ProviderLikeModel()):
        trajectory = captured(runtime, pa.AGENT)
        assert trajectory.outcome["decision"] == "BUY"
        # ...and refused by the framework's own guard at replay: the branch aborts
        run = replayed(trajectory, pa.AGENT)
    assert run.failure == "agent_error"
    assert run.layers is None


def test_an_instrumented_agent_is_not_replayed(runtime: Runtime) -> None:
    trajectory = captured(runtime, pa.AGENT)
    pa.procurement.instrument = True
    try:
        run = replayed(trajectory, pa.AGENT)
    finally:
        pa.procurement.instrument = None
    assert run.failure == "agent_error"


# -- sealed content ---------------------------------------------------------------------


@pytest.mark.parametrize("agent", [pa.AGENT, pa.HOSTED_MODEL_AGENT], ids=["in-process", "hosted"])
def test_sealed_content_never_leaves_the_payload_store(
    runtime: Runtime,
    agent: AgentSpec,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    specimen = captured_id(runtime, agent)
    call_id, field, value = (
        ("main/quote#1", "/output/price", 150.0)
        if agent is pa.AGENT
        else ("main/planner#2", "/calls/final_result/decision", "HOLD")
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
    assert find_canaries(json.dumps(outcome.envelope).encode(), list(pa.CANARIES)) == []
    printed = capsys.readouterr()
    assert (
        find_canaries((printed.out + printed.err + caplog.text).encode(), list(pa.CANARIES)) == []
    )
    assert scan_tree(runtime.home.root, list(pa.CANARIES)) == {}


_KEY_IN_A_FRESH_PROCESS = """
import json, sys
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from enclave.adapters.pydantic_ai import model_request

parameters = ModelRequestParameters(
    revealed_tool_names={"quote", "rating", "supplier", "terms", "verdict", "zeta"}
)
messages = [ModelRequest(parts=[UserPromptPart("order")])]
print(json.dumps(model_request(messages, None, parameters), sort_keys=True))
"""


def test_a_model_request_is_recorded_alike_whatever_the_process_s_hash_seed() -> None:
    # the replay worker is another process: a set's order there must not change the key
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[3])
    keys = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root}
        done = subprocess.run(
            [sys.executable, "-c", _KEY_IN_A_FRESH_PROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        keys.add(done.stdout)
    assert len(keys) == 1


_REPLAY_IN_A_FRESH_PROCESS = """
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from enclave import Home, Runtime
from enclave.replay.runs import open_specimen, replay_run
from tests.agents import pydantic_ai_agents as pa

runtime = Runtime.open(Home.open(Path(sys.argv[1])))
now = datetime.now(UTC) + timedelta(minutes=5)
opened = open_specimen(runtime, sys.argv[2], job_id="cold", lease_seconds=60, now=now)
run = replay_run(
    trajectory=opened.trajectory,
    agent=pa.HOSTED_MODEL_AGENT,
    seed=5,
    variant="baseline",
    audit_time=now,
)
print(run.failure)
runtime.close()
"""


def test_a_capture_in_a_warm_process_replays_in_a_cold_one(tmp_path: Any) -> None:
    # pydantic-ai builds an agent's graph once per process, drawing ids the first time:
    # a capture after another run in its process draws none, a fresh worker does
    import os
    import subprocess
    import sys
    from pathlib import Path

    home = tmp_path / "home"
    runtime = Runtime.open(Home.init(home))
    try:
        captured_id(runtime, pa.HOSTED_MODEL_AGENT)  # the process is warm after this
        specimen = captured_id(runtime, pa.HOSTED_MODEL_AGENT)
    finally:
        runtime.close()
    root = str(Path(__file__).resolve().parents[3])
    done = subprocess.run(
        [sys.executable, "-c", _REPLAY_IN_A_FRESH_PROCESS, str(home), specimen],
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == "None", done.stdout[-2000:]
