"""The model, declared hosted (``model="planner"``): one MODEL boundary.

``model_spec`` derives the boundary: request ``{"messages", "settings", "parameters"}``,
response ``{"message", "calls"}`` (``_codec``), and a schema of ``calls`` naming what
an intervention can address: each tool's arguments, under ``name`` and up to
``MAX_SAME_CALLS`` numbered repeats (``name#1``...), and the typed output
(``final_result``). ``BoundaryModel`` is the ``WrapperModel`` a run puts in the agent's
place (``agent.override(model=...)``): its ``request`` goes through ``ctx.acall``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pydantic
from pydantic_ai import Agent, NativeOutput, PromptedOutput
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse, infer_model
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy
from .._schemas import inline_refs
from ._codec import OUTPUT_TOOL, decode_response, encode_response, model_request
from ._tools import Tool

__all__ = ["MAX_SAME_CALLS", "BoundaryModel", "model_of", "model_spec"]

# calls of one tool in one model response an intervention can address: name, name#1...
MAX_SAME_CALLS = 8


def model_spec(
    name: str, agent: Agent[Any, Any], tools: Mapping[str, Tool], rule: FieldPolicy
) -> BoundarySpec:
    proposals: dict[str, Any] = {}
    for tool_name, tool in tools.items():
        for n in range(MAX_SAME_CALLS):
            proposals[tool_name if n == 0 else f"{tool_name}#{n}"] = tool.parameters
    output_type = agent.output_type
    if isinstance(output_type, NativeOutput | PromptedOutput):  # structured text
        output_type = output_type.outputs
    if isinstance(output_type, type) and output_type is not str:
        output = inline_refs(pydantic.TypeAdapter(output_type).json_schema())
        proposals[OUTPUT_TOOL] = output
    return BoundarySpec(
        kind=StepKind.MODEL,
        name=name,
        request={"messages": rule, "settings": rule, "parameters": rule},
        response={"message": rule, "calls": rule},
        schema_id="pydantic-ai-model-response",
        json_schema={
            "type": "object",
            "properties": {"calls": {"type": "object", "properties": proposals}},
        },
    )


def model_of(agent: Agent[Any, Any]) -> Model:
    if agent.model is None:
        raise ValueError("the agent has no model to declare a boundary")
    return infer_model(agent.model)


class BoundaryModel(WrapperModel):
    """The agent's model as a declared boundary: every request through ``ctx.acall``."""

    def __init__(self, wrapped: Model, ctx: Context, spec: BoundarySpec) -> None:
        super().__init__(wrapped)
        self._ctx = ctx
        self._spec = spec

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            response = await self.wrapped.request(
                messages, model_settings, model_request_parameters
            )
            return encode_response(response)

        request = model_request(messages, model_settings, model_request_parameters)
        answer = await self._ctx.acall(self._spec, request, live=live)
        return decode_response(answer)

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        raise NotImplementedError("streamed model requests are not captured; use agent.run")
        yield  # pragma: no cover - an async generator
