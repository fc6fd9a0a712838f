"""A refund desk written with the OpenAI Agents SDK, captured through its adapter.

The agent looks the order up with a function tool and answers with a typed ``Refund``:
REFUND when the parcel was not delivered, else DENY. The model here is the SDK's own
``agents.testing.ScriptedModel``; its last step reads the tool's answer from the call, so
the decision depends on it.

``HOSTED`` is the desk on a hosted model: a chat-completions model on a local
OpenAI-compatible server (``local_model``: llama.cpp's server with a small real model),
declared a boundary (``hosted="refund-model"``), so its answers are recorded at capture
and served at replay. A model that small does not call tools; the hosted desk's dynamic
instructions read the order service themselves, through ``ctx`` (a boundary the adapter
does not know, declared beside it).

    PYTHONPATH=examples replay-enclave capture openai_agents_agent:AGENT --input run.json
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    function_tool,
)
from agents.models.interface import Model
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from httpx2 import Limits
from local_model import API_KEY, MODEL, URL
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from enclave.adapters.openai_agents import agent_spec
from enclave.capture import BoundarySpec, Context, policy
from ledger import StepKind


class Order(TypedDict):
    delivered: bool
    carrier_note: str


class Refund(BaseModel):
    decision: Literal["REFUND", "DENY"]
    order_id: str = Field(max_length=16)


@function_tool
def order_status(order_id: str) -> Order:
    """Look an order up in the shop's order service (a stand-in here).

    Args:
        order_id: The order's id.
    """
    return {"delivered": False, "carrier_note": "parcel returned to depot"}


refund_desk = Agent(
    name="refund-desk",
    instructions="Look the order up, then decide whether to refund it.",
    tools=[order_status],
    output_type=Refund,
)


def _decide(call: ModelCall) -> list[object]:
    answers = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    order = ast.literal_eval(answers[-1]["output"])
    decision = "DENY" if order["delivered"] else "REFUND"
    refund = {"decision": decision, "order_id": "A-1042"}
    return [assistant_message(json.dumps(refund, separators=(",", ":")))]


def scripted() -> Model:
    """The model of one run: look the order up, then decide from what the tool said."""
    return ScriptedModel(
        [
            [function_call("order_status", {"order_id": "A-1042"}, call_id="c1")],
            ModelStep.respond(_decide),
        ]
    )


# the same agent carrying its model, for `replay-enclave capture openai_agents_agent:scripted_desk`
# (the adapter runs a fresh copy of the model each run)
scripted_desk = refund_desk.clone(model=scripted())

AGENT = agent_spec(
    refund_desk,
    name="refund-desk",
    version="1.0.0",
    model=scripted,
    decision="decision",
)


# -- the hosted form ---------------------------------------------------------------------

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
