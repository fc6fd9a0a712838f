"""A refund desk written with the OpenAI Agents SDK, captured through its adapter.

The agent looks the order up with a function tool and answers with a typed ``Refund``:
REFUND when the parcel was not delivered, else DENY. The model here is the SDK's own
``agents.testing.ScriptedModel``; its last step reads the tool's answer from the call, so
the decision depends on it.

``openai_agents_hosted_agent.py`` is the desk on a hosted model.

    PYTHONPATH=examples replay-enclave capture openai_agents_agent:AGENT --input run.json
"""

from __future__ import annotations

import ast
import json
from typing import Literal

from agents import Agent, function_tool
from agents.models.interface import Model
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from enclave.adapters.openai_agents import agent_spec


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
