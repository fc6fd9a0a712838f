"""The hosted form of the pydantic-ai router (``pydantic_ai_agent.py``): ``OpenAIChatModel``
on a local OpenAI-compatible server (``local_model``: llama.cpp's server with a small real
model), declared a boundary (``model="router-model"``), so its typed answers are recorded
at capture and served at replay. It answers in the provider's structured-output mode
(``NativeOutput``): a model that small does not call tools, so the router's instructions
read the customer's account themselves, through the run's ``ctx`` (handed in its deps;
a boundary the adapter does not know, declared beside it). A module of its own: the
provider's client is no part of the in-process router's runs.

``WIRE`` is the same router with its model captured at the wire: the model's client is
built for each run on the wire adapter (``async_client(ctx, ROUTER_MODEL)``), so each
exchange with the server is recorded as it was sent and answered — the form governed
inference can ask again when an intervention changes what the model is asked.

    PYTHONPATH=examples replay-enclave capture pydantic_ai_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from httpx2 import Limits
from local_model import API_KEY, MODEL, URL
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic_ai import Agent, NativeOutput, RunContext
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai_agent import Routing

from enclave.adapters.http import async_client, http_boundary
from enclave.adapters.pydantic_ai import agent_spec
from enclave.capture import BoundarySpec, Context, policy
from ledger import StepKind

CUSTOMER_ACCOUNT = BoundarySpec(
    kind=StepKind.TOOL,
    name="customer-account",
    request={"customer": policy("internal")},
    response={"open_complaints": policy("confidential"), "last_contact": policy("confidential")},
    json_schema={
        "type": "object",
        "properties": {
            "open_complaints": {"type": "integer"},
            "last_contact": {"type": "string"},
        },
    },
)


@dataclass
class Desk:
    """The router's dependencies: the run's ``ctx``, for the code the framework calls."""

    ctx: Context


async def _account_service(request: Mapping[str, Any]) -> dict[str, Any]:
    """The live account service (a stand-in): called at capture, never at replay."""
    return {"open_complaints": 3, "last_contact": "asked twice for a refund, no answer yet"}


# each run has an event loop of its own: the client keeps no connection open past a run
client = AsyncOpenAI(
    base_url=URL,
    api_key=API_KEY,
    max_retries=0,
    http_client=DefaultAsyncHttpxClient(limits=Limits(max_keepalive_connections=0)),
)
hosted_router: Agent[Desk, Routing] = Agent(
    OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client)),
    deps_type=Desk,
    output_type=NativeOutput(Routing),
    instructions="Route the ticket: ESCALATE an unhappy customer, else QUEUE.",
    model_settings={"temperature": 0.0, "max_tokens": 128},  # greedy decoding
)


@hosted_router.instructions
async def account_instructions(rc: RunContext[Desk]) -> str:
    account = await rc.deps.ctx.acall(
        CUSTOMER_ACCOUNT, {"customer": "C-311"}, live=_account_service
    )
    return (
        f"The customer's account: {account['open_complaints']} open complaints; "
        f"last contact: {account['last_contact']}."
    )


HOSTED = agent_spec(
    hosted_router,
    name="pydantic-ai-router-hosted",
    version="1.0.0",
    decision="decision",
    model="router-model",
    deps=lambda ctx, inputs: Desk(ctx),
    boundaries=(CUSTOMER_ACCOUNT,),
    # the provider's client and its transport core: imported once by the replay worker's
    # template, not in every run
    frameworks=("openai", "pydantic_ai.models.openai", "httpcore2"),
)

ROUTER_MODEL = http_boundary("router-model")


def wire_model(ctx: Context) -> Model:
    """The model of ``WIRE``: its client on the wire adapter, made for one run (the
    openai client's own library is ``httpx2``)."""
    wired = AsyncOpenAI(
        base_url=URL,
        api_key=API_KEY,
        max_retries=0,  # a retry's timing is the client's, not the run's
        http_client=async_client(ctx, ROUTER_MODEL, library="httpx2"),
    )
    return OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=wired))


WIRE = agent_spec(
    hosted_router,
    name="pydantic-ai-router-wire",
    version="1.0.0",
    decision="decision",
    wire_model=wire_model,
    deps=lambda ctx, inputs: Desk(ctx),
    boundaries=(CUSTOMER_ACCOUNT, ROUTER_MODEL),
    frameworks=("openai", "pydantic_ai.models.openai", "httpcore2", "enclave.adapters.http"),
)
