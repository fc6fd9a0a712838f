"""pydantic-ai agents written as its documentation writes them, captured unchanged.

A procurement agent: the model (a scripted ``FunctionModel``) asks for two quotes in
one turn — a parallel batch the framework runs concurrently — then both suppliers'
ratings in the next, then answers with a typed ``Verdict`` built from the tool
results. The live tools sleep a random latency, so the world decides the order the
batch's answers arrive in, and they raise unless ``with live():`` is active: a replay
that ever ran one would end its branch with ``agent_error``.

``HOSTED_MODEL_AGENT`` treats the same script as a hosted model (a model boundary).
``ProviderLikeModel`` behaves like a provider's model (it consults
``pydantic_ai.models.check_allow_model_requests`` before every request, and otherwise
answers as the script would): put in the agent's place at replay, it is a live call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, check_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.settings import ModelSettings

from enclave.adapters.pydantic_ai import agent_spec
from tests.support.live_world import LiveWorld

SUPPLIERS = ("acme", "globex")
THRESHOLD = 0.5
MAX_LATENCY = 0.004  # seconds: enough to shuffle the batch's arrival order
CANARY_PROMPT = "CANARY-PYDAI-PROMPT-7e21c4"  # planted in the user prompt
CANARY_TERMS = "CANARY-PYDAI-TERMS-b90f13"  # planted in every quote the tool returns
CANARIES = (CANARY_PROMPT, CANARY_TERMS)

WORLD = LiveWorld(MAX_LATENCY)
live = WORLD.open  # the live world for one capture


class Quote(BaseModel):
    supplier: str
    price: float
    terms: str


class Verdict(BaseModel):
    supplier: str
    decision: Literal["BUY", "HOLD"]
    score: float
    rationale: str


@dataclass
class Deps:
    region: str


def _returns(messages: list[ModelMessage]) -> dict[str, Any]:
    """Tool results so far, by tool and supplier."""
    out: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    content = part.content
                    if part.tool_name == "quote":
                        quote = Quote.model_validate(content)
                        out[f"quote:{quote.supplier}"] = quote
                    elif part.tool_name == "rating":
                        out[f"rating:{_supplier_of(messages, part.tool_call_id)}"] = content
    return out


def _supplier_of(messages: list[ModelMessage], tool_call_id: str) -> str:
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == tool_call_id:
                    return str(part.args_as_dict()["supplier"])
    raise LookupError("a tool return without its call")


def procurement_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: two quotes at once, then both ratings at once, then a Verdict for the
    supplier of best value (rating per price)."""
    seen = _returns(messages)
    if "quote:acme" not in seen:  # one turn, a batch of two calls
        return ModelResponse(parts=[ToolCallPart("quote", {"supplier": s}) for s in SUPPLIERS])
    if "rating:acme" not in seen:
        return ModelResponse(parts=[ToolCallPart("rating", {"supplier": s}) for s in SUPPLIERS])
    values = {s: float(seen[f"rating:{s}"]) * 100 / seen[f"quote:{s}"].price for s in SUPPLIERS}
    best = max(SUPPLIERS, key=lambda s: values[s])
    score = round(min(1.0, values[best]), 6)
    verdict = {
        "supplier": best,
        "decision": "BUY" if score >= THRESHOLD else "HOLD",
        "score": score,
        "rationale": f"{best} quotes {seen[f'quote:{best}'].price}",
    }
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


def build(model: Model) -> Agent[Deps, Verdict]:
    agent = Agent(
        model,
        deps_type=Deps,
        output_type=Verdict,
        instructions="Choose the supplier with the best value; buy when the score is high.",
    )

    @agent.tool
    async def quote(ctx: RunContext[Deps], supplier: str) -> Quote:
        """A supplier's current quote for the order."""
        await WORLD.reach("a supplier")
        price = 100 + 70 * SUPPLIERS.index(supplier) + (5 if ctx.deps.region == "eu" else 0)
        return Quote(supplier=supplier, price=price, terms=f"net 30 {CANARY_TERMS}")

    @agent.tool_plain
    async def rating(supplier: str) -> float:
        """The supplier's delivery rating, 0 to 1."""
        await WORLD.reach("a supplier")
        return round(0.9 - 0.1 * SUPPLIERS.index(supplier), 2)

    return agent


procurement = build(FunctionModel(procurement_script))


def deps_of(inputs: dict[str, Any]) -> Deps:
    return Deps(region=str(inputs.get("region", "us")))


def prompt(order: str = "PO-7731") -> str:
    return f"Order {order}: 40 pallets, see attached note {CANARY_PROMPT}"


INPUT = {"input": prompt(), "region": "us"}


def _spec(agent_name: str, **options: Any) -> Any:
    return agent_spec(
        procurement,
        name=f"tests.agents.pydantic_ai_agents:{agent_name}",
        version="1.0.0",
        decision="decision",
        score="score",
        deps=deps_of,
        extra_inputs=("region",),
        **options,
    )


AGENT = _spec("AGENT")
HOSTED_MODEL_AGENT = _spec("HOSTED_MODEL_AGENT", model="planner")
# a categorical agent: a decision and no score
CATEGORICAL = agent_spec(
    procurement,
    name="tests.agents.pydantic_ai_agents:CATEGORICAL",
    version="1.0.0",
    decision="decision",
    deps=deps_of,
    extra_inputs=("region",),
)


class ProviderLikeModel(Model):
    """A model that behaves like a provider's: it refuses to run when model requests are
    disallowed, as every hosted model class in pydantic-ai does, then answers with the
    procurement script."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        check_allow_model_requests()  # the framework's guard, as a provider model calls it
        info = AgentInfo(
            function_tools=model_request_parameters.function_tools,
            allow_text_output=model_request_parameters.allow_text_output,
            output_tools=model_request_parameters.output_tools,
            model_settings=model_settings,
            model_request_parameters=model_request_parameters,
            instructions=None,
        )
        return procurement_script(messages, info)

    @property
    def model_name(self) -> str:
        return "provider-like"

    @property
    def system(self) -> str:
        return "provider-like"


# a text-only answer, for the codec round trip
TEXT_RESPONSE = ModelResponse(parts=[TextPart("no order today")])
