"""The pydantic-ai adapter's wire form: a model whose client is built for each run on the
wire adapter (``agent_spec(..., wire_model=...)``), captured against a real local
OpenAI-compatible server (``examples/local_model_server.py``). Each run's model is made
from that run's ``ctx``; the framework's guard against model requests at replay lets the
wire model through and no other model, not even one asked while the wire model's
request is in flight; and the wire client never asks what the record does not hold,
with the server still listening.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from enclave import BadInput, Home, Runtime
from enclave.adapters.http import async_client, http_boundary
from enclave.adapters.pydantic_ai import agent_spec
from enclave.capture import AgentSpec, BoundarySpec, Context, capture, policy
from enclave.replay import Intervention, Strategy
from enclave.replay.layers import recorded_layers
from enclave.replay.runs import RunResult, Trajectory, apply_intervention, open_specimen, replay_run
from ledger import StepKind
from tests.agents import pydantic_ai_agents as pa

ROOT = Path(__file__).resolve().parents[3]
SEED = 5
MODEL = "screening-model-2026-11-01"  # the name the local server answers with
SCREENING_MODEL = http_boundary("screening-model")
RISK_SERVICE = BoundarySpec(
    kind=StepKind.TOOL,
    name="risk-service",
    request={"applicant": policy("internal")},
    response={"risk": policy("confidential")},
    json_schema={"type": "object", "properties": {"risk": {"type": "number"}}},
)


@dataclass
class Desk:
    """The run's dependencies: its ``ctx``, for the agent's own code."""

    ctx: Context


async def _risk_service(request: Mapping[str, Any]) -> dict[str, Any]:
    return {"risk": 0.7}  # the live service at capture: never called at replay


def screener(*extra: Any) -> Agent[Desk, str]:
    """A screening agent whose instructions read the risk service through ``ctx``; the
    local server answers REJECT at a risk of 0.5 or more. ``extra``: further
    instructions functions, run as agent code."""
    agent: Agent[Desk, str] = Agent(deps_type=Desk, output_type=str)

    @agent.instructions
    async def risk_note(rc: RunContext[Desk]) -> str:
        answer = await rc.deps.ctx.acall(RISK_SERVICE, {"applicant": "A-7"}, live=_risk_service)
        return f"Screen the application: applicant risk {answer['risk']}."

    for function in extra:
        agent.instructions(function)
    return agent


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A real local OpenAI-compatible server, on a port of this module's own."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "local_model_server.py"), "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and "serving" in server.stdout.readline()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stdout is not None:
            server.stdout.close()


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("pydantic-ai-wire") / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def wire_model(url: str, given: list[Context] | None = None) -> Any:
    """The factory ``wire_model=`` takes: the run's model, its client on the wire."""

    def made(ctx: Context) -> Model:
        if given is not None:
            given.append(ctx)
        client = AsyncOpenAI(
            base_url=url,
            api_key="local-placeholder",
            max_retries=0,
            http_client=async_client(ctx, SCREENING_MODEL, library="httpx2"),
        )
        return OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))

    return made


def spec_of(agent: Agent[Desk, str], factory: Any) -> AgentSpec:
    return agent_spec(
        agent,
        name="screener-wire",
        version="1.0.0",
        decision=lambda answer: str(answer).strip(),
        wire_model=factory,
        deps=lambda ctx, inputs: Desk(ctx),
        boundaries=(RISK_SERVICE, SCREENING_MODEL),
    )


def captured(runtime: Runtime, spec: AgentSpec) -> Trajectory:
    specimen = capture(
        runtime, spec, {"input": "application A-7"}, tenant_id="acme", seed=SEED
    ).specimen_id
    return open_specimen(runtime, specimen, job_id="wire", lease_seconds=60, now=now()).trajectory


def replayed(trajectory: Trajectory, spec: AgentSpec) -> RunResult:
    return replay_run(
        trajectory=trajectory, agent=spec, seed=SEED, variant="baseline", audit_time=now()
    )


def test_the_wire_model_is_made_from_each_run_s_ctx_and_replays_from_the_record(
    runtime: Runtime, url: str
) -> None:
    given: list[Context] = []
    spec = spec_of(screener(), wire_model(url, given))
    assert {b.name for b in spec.boundaries} == {"risk-service", "screening-model"}
    trajectory = captured(runtime, spec)
    assert trajectory.outcome["decision"] == "REJECT"
    (exchange,) = [s for s in trajectory.steps if s.kind == "model"]
    assert exchange.call_id == "main/screening-model#0"
    assert exchange.request["url"].endswith("/v1/chat/completions")
    assert exchange.request["body"]["json"]["model"] == MODEL
    assert exchange.response["body"]["json"]["model"] == MODEL
    # the framework's guard is on at replay, and the wire model is let through it
    run = replayed(trajectory, spec)
    assert run.failure is None, run.failure_detail
    assert run.layers == recorded_layers(trajectory.steps)
    assert ("main/screening-model#0", "record") in run.served
    # a model made for each run from that run's ctx: the capture's and the replay's
    assert len(given) == 2 and given[0] is not given[1]
    assert given[1].serves_record and not given[0].serves_record


def test_a_wire_model_whose_client_is_not_on_the_wire_is_refused_at_capture(
    runtime: Runtime, url: str
) -> None:
    """A factory that builds its client without ``async_client`` would send the model's
    request live and record nothing: the capture is refused, one line naming the fix,
    and no specimen is sealed."""

    def plain(ctx: Context) -> Model:
        client = AsyncOpenAI(base_url=url, api_key="local-placeholder", max_retries=0)
        return OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))

    spec = spec_of(screener(), plain)
    before = len(runtime.ledger.list_specimens(limit=1000))
    with pytest.raises(BadInput, match="crossed no model boundary") as refused:
        capture(runtime, spec, {"input": "application A-7"}, tenant_id="acme", seed=SEED)
    assert "async_client" in str(refused.value) and "\n" not in str(refused.value)
    assert len(runtime.ledger.list_specimens(limit=1000)) == before  # nothing sealed


def test_at_replay_the_wire_client_never_asks_what_the_record_does_not_hold(
    runtime: Runtime, url: str
) -> None:
    spec = spec_of(screener(), wire_model(url))
    trajectory = captured(runtime, spec)
    assert trajectory.outcome["decision"] == "REJECT"
    lower = Intervention(Strategy.REPLACE, call_id="main/risk-service#0", field="/risk", value=0.2)
    digester = runtime.digests.for_tenant("acme")
    applied = apply_intervention(trajectory, lower, agent=spec, digester=digester)
    run = replay_run(
        trajectory=applied.trajectory, agent=spec, seed=SEED, variant="i", audit_time=now()
    )
    # the server still listens and would answer APPROVE: the record alone answers, and
    # holds nothing for the changed request
    assert run.failure == "unservable", run.failure_detail
    assert ("main/screening-model#0", "unservable") in run.served


def test_a_model_that_is_not_the_wire_model_is_still_refused_at_replay(
    runtime: Runtime, url: str
) -> None:
    async def ask_another_model(rc: RunContext[Desk]) -> str:
        answer = await pa.ProviderLikeModel().request([], None, ModelRequestParameters())
        return f"Another model had {len(answer.parts)} parts to say."

    spec = spec_of(screener(ask_another_model), wire_model(url))
    trajectory = captured(runtime, spec)  # allowed to go live at capture...
    assert trajectory.outcome["decision"] == "REJECT"
    run = replayed(trajectory, spec)  # ...refused by the framework's guard at replay
    assert run.failure == "agent_error"
    assert run.layers is None


class _InFlight(WrapperModel):
    """The wire model, yielding to the event loop while its request is in flight."""

    def __init__(self, wrapped: Model, background: list[asyncio.Task[str]]) -> None:
        super().__init__(wrapped)
        self._background = background

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        await asyncio.wait(self._background)  # another task asks meanwhile
        return await self.wrapped.request(messages, model_settings, model_request_parameters)


def test_a_model_asked_while_the_wire_model_s_request_is_in_flight_is_refused(
    runtime: Runtime, url: str
) -> None:
    outcomes: list[str] = []
    background: list[asyncio.Task[str]] = []

    async def another_model() -> str:
        try:
            await pa.ProviderLikeModel().request([], None, ModelRequestParameters())
        except RuntimeError:
            outcomes.append("refused")
            return "refused"
        outcomes.append("answered")
        return "answered"

    async def start_another_model(rc: RunContext[Desk]) -> str:
        background[:] = [asyncio.create_task(another_model())]
        return "Be brief."

    factory = wire_model(url)
    spec = spec_of(screener(start_another_model), lambda ctx: _InFlight(factory(ctx), background))
    trajectory = captured(runtime, spec)
    assert outcomes == ["answered"]  # nothing is refused at capture
    run = replayed(trajectory, spec)
    assert run.failure is None, run.failure_detail
    # the allowance is the wire model's request's own, not the process's while it waits
    assert outcomes == ["answered", "refused"]


def test_a_model_is_captured_at_one_place_and_the_wire_is_declared(url: str) -> None:
    factory = wire_model(url)
    with pytest.raises(ValueError, match="not also a hosted boundary"):
        agent_spec(screener(), name="w", version="1", decision="d", wire_model=factory, model="m")
    with pytest.raises(ValueError, match="boundaries"):  # the wire's boundary undeclared
        agent_spec(
            screener(),
            name="w",
            version="1",
            decision="d",
            wire_model=factory,
            boundaries=(RISK_SERVICE,),
        )
    # an agent whose own model is hosted needs no alias in the wire form: it is replaced
    hosted = pa.build(pa.ProviderLikeModel())
    with pytest.raises(ValueError, match="declared a boundary"):
        agent_spec(hosted, name="x", version="1", decision="decision")
    spec = agent_spec(
        hosted,
        name="x",
        version="1",
        decision="decision",
        wire_model=factory,
        boundaries=(SCREENING_MODEL,),
    )
    assert spec.boundary("screening-model").kind is StepKind.MODEL
