"""The hosted form of the Agents SDK refund desk (``openai_agents_agent.py``): a
chat-completions model on a local OpenAI-compatible server (``local_model``: llama.cpp's
server with a small real model), declared a boundary (``hosted="refund-model"``), so its
answers are recorded at capture and served at replay. A model that small does not call
tools: the desk's dynamic instructions read the order service themselves, through ``ctx``
(a boundary the adapter does not know, declared beside it).

``WIRE`` is the same desk with its model captured at the wire: the model's client is
built for each run on the wire adapter (``async_client(ctx, REFUND_MODEL)``), so each
exchange with the server is recorded as it was sent and answered — the form governed
inference can ask again when an intervention changes what the model is asked.

    PYTHONPATH=examples replay-enclave capture openai_agents_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunContextWrapper
from agents.models.interface import Model
from httpx2 import Limits
from local_model import API_KEY, MODEL, URL
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from openai_agents_agent import Refund

from enclave.adapters.http import async_client, http_boundary
from enclave.adapters.openai_agents import agent_spec
from enclave.capture import BoundarySpec, Context, policy
from ledger import StepKind

ORDER_SERVICE = BoundarySpec(
    kind=StepKind.TOOL,
    name="order-service",
    request={"order_id": policy("internal")},
    response={"delivered": policy("confidential"), "carrier_note": policy("restricted")},
    json_schema={
        "type": "object",
        "properties": {"delivered": {"type": "boolean"}, "carrier_note": {"type": "string"}},
    },
)


@dataclass
class Desk:
    """The SDK's run context: the run's ``ctx``, for the code the SDK calls."""

    ctx: Context


async def _order_service(request: Mapping[str, Any]) -> dict[str, Any]:
    """The live order service (a stand-in): called at capture, never at replay."""
    return {"delivered": False, "carrier_note": "parcel returned to depot"}


async def order_instructions(wrapper: RunContextWrapper[Desk], agent: Agent[Desk]) -> str:
    order = await wrapper.context.ctx.acall(
        ORDER_SERVICE, {"order_id": "A-1042"}, live=_order_service
    )
    status = "delivered" if order["delivered"] else "not delivered"
    return (
        f"Decide whether to refund order A-1042. The order service says: {status}; "
        f"the carrier notes: {order['carrier_note']}. Refund what was not delivered."
    )


def hosted_model() -> Model:
    """The hosted form's model, on the local server, made for one run: each run has an
    event loop of its own, so its client keeps no connection open past the run."""
    client = AsyncOpenAI(
        base_url=URL,
        api_key=API_KEY,
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(limits=Limits(max_keepalive_connections=0)),
    )
    return OpenAIChatCompletionsModel(MODEL, openai_client=client)


hosted_desk: Agent[Desk] = Agent(
    name="refund-desk",
    instructions=order_instructions,
    output_type=Refund,
    model_settings=ModelSettings(temperature=0.0, max_tokens=128),  # greedy decoding
)

REFUND_MODEL = http_boundary("refund-model")


def wire_model(ctx: Context) -> Model:
    """The model of ``WIRE``: its client on the wire adapter, made for one run."""
    client = AsyncOpenAI(
        base_url=URL,
        api_key=API_KEY,
        max_retries=0,  # a retry's timing is the client's, not the run's
        http_client=async_client(ctx, REFUND_MODEL, library="httpx2"),
    )
    return OpenAIChatCompletionsModel(MODEL, openai_client=client)


HOSTED = agent_spec(
    hosted_desk,
    name="refund-desk-hosted",
    version="1.0.0",
    model=hosted_model,
    hosted="refund-model",
    decision="decision",
    context=lambda ctx, inputs: Desk(ctx),
    boundaries=(ORDER_SERVICE,),
    # the transport core the model's client imports when first built: imported once by
    # the replay worker's template, not in a run (where its first import spawns a process)
    frameworks=("httpcore2",),
)

WIRE = agent_spec(
    hosted_desk,
    name="refund-desk-wire",
    version="1.0.0",
    model=wire_model,
    decision="decision",
    context=lambda ctx, inputs: Desk(ctx),
    boundaries=(ORDER_SERVICE, REFUND_MODEL),
    frameworks=("httpcore2", "openai", "enclave.adapters.http"),
)
