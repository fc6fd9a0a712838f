"""The run's model: one MODEL boundary per hosted alias, or agent code.

``_RoutedModel`` implements ``agents.models.interface.Model``. With a boundary, each
``get_response`` crosses ``ctx.acall`` with the normalised request (``_codec``): at
capture the wrapped model answers and the answer is recorded; at replay the record
answers and the wrapped model is never called. Without one, the wrapped model (an
in-process ``Model``) runs as the agent's own code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agents import FunctionTool, Handoff
from agents.agent_output import AgentOutputSchemaBase
from agents.items import ModelResponse, TResponseInputItem
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from openai.types.responses.response_prompt_param import ResponsePromptParam

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy, policy
from ._codec import dump_response, load_response, model_request

__all__ = ["MAX_ITEMS", "RoutedModel", "model_boundary"]

_SEALED = policy("confidential")
# output items and content parts an intervention can address by position (``/output/0``)
MAX_ITEMS = 8


def _merged_properties(schemas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for schema in schemas:
        for name, member in (schema.get("properties") or {}).items():
            merged.setdefault(name, member)
    return merged


def model_boundary(
    alias: str,
    *,
    tools: Sequence[FunctionTool] = (),
    outputs: Sequence[Mapping[str, Any]] = (),
    fields: FieldPolicy = _SEALED,
) -> BoundarySpec:
    """The MODEL boundary of a hosted model (``alias``): the normalised request in, the
    ``ModelResponse`` out, every field sealed. Its JSON Schema lets an intervention
    address a proposed tool call's argument (``/output/0/arguments/supplier``, members of
    the ``tools``' parameters) and a structured output's member
    (``/output/0/content/0/text/decision``, members of the ``outputs`` schemas)."""
    if not alias or "/" in alias or "#" in alias:
        raise ValueError("a model alias is a non-empty name without '/' or '#'")
    text = {"type": ["object", "string"], "properties": _merged_properties(outputs)}
    part = {"type": "object", "properties": {"text": text}}
    item = {
        "type": "object",
        "properties": {
            "arguments": {
                "type": ["object", "string"],
                "properties": _merged_properties([t.params_json_schema for t in tools]),
            },
            "content": {
                "type": "object",
                "properties": {str(i): part for i in range(MAX_ITEMS)},
            },
        },
    }
    return BoundarySpec(
        kind=StepKind.MODEL,
        name=alias,
        request={
            name: fields
            for name in (
                "system_instructions",
                "input",
                "model_settings",
                "tools",
                "output_schema",
                "handoffs",
            )
        },
        response={
            name: fields for name in ("output", "usage", "response_id", "request_id", "raw_usage")
        },
        schema_id="openai-agents:model-response",
        schema_version="1",
        aliases=(alias,),
        json_schema={
            "type": "object",
            "properties": {
                "output": {
                    "type": "object",
                    "properties": {str(i): item for i in range(MAX_ITEMS)},
                }
            },
        },
    )


class RoutedModel(Model):
    """The run's model: a boundary (``spec``) crossed through ``ctx``, or agent code."""

    def __init__(self, inner: Model, ctx: Context, spec: BoundarySpec | None) -> None:
        self._inner, self._ctx, self._spec = inner, ctx, spec

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        request = model_request(
            system_instructions,
            input,
            model_settings,
            tools,
            output_schema,
            handoffs,
            previous_response_id=previous_response_id,
            conversation_id=conversation_id,
            prompt=prompt,
        )

        async def ask() -> ModelResponse:
            return await self._inner.get_response(
                system_instructions,
                input,
                model_settings,
                tools,
                output_schema,
                handoffs,
                ModelTracing.DISABLED,
                previous_response_id=None,
                conversation_id=None,
                prompt=None,
            )

        if self._spec is None:
            return await ask()

        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            return dump_response(await ask())

        spec = self._spec
        fields = await self._ctx.acall(spec, request, live=live, alias=spec.aliases[0])
        return load_response(fields)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[Any]:
        """Runs use ``Runner.run``: a streamed call is not captured, so it is refused."""
        raise NotImplementedError("streamed model calls are not captured (use Runner.run)")

    async def close(self) -> None:
        await self._inner.close()
