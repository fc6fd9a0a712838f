"""The key of a model call and the SDK's own codec of its answer.

``model_request`` is what decides a ``Model.get_response`` answer, as JSON: the tracing
mode and the per-run ``prompt_cache_key`` are left out, and a call that depends on
server-side state is refused (``ServerStateRefused``). ``dump_response`` records a
``ModelResponse`` with the pydantic ``model_dump`` of each output item (by alias, as the
API spells it) and ``serialize_usage``; ``load_response`` rebuilds an equal one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast, get_args

from agents import FunctionTool, Handoff
from agents.agent_output import AgentOutputSchemaBase
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem
from agents.model_settings import ModelSettings
from agents.usage import deserialize_usage, serialize_usage
from openai.types.responses import Response
from openai.types.responses.response_prompt_param import ResponsePromptParam
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

__all__ = ["ServerStateRefused", "dump_response", "load_response", "model_request"]

_ITEM: TypeAdapter[Any] = TypeAdapter(TResponseOutputItem)


def complete_models(*roots: Any) -> int:
    """Build the validators of the pydantic models reachable from ``roots`` now.

    The openai types defer building each model's validator to its first use, and
    pydantic reads ``PYDANTIC_DISABLE_PLUGINS`` while it builds one: a process that has
    used a model already (a capture after another) reads nothing, a fresh one (a replay
    worker) reads the variable inside the run. Built once here, at import, outside any
    run, both take the same path. Returns how many models were built."""
    seen: set[type[BaseModel]] = set()
    todo: list[Any] = list(roots)
    built = 0
    while todo:
        node = todo.pop()
        todo.extend(get_args(node))
        if isinstance(node, type) and issubclass(node, BaseModel) and node not in seen:
            seen.add(node)
            if not node.__pydantic_complete__:
                node.model_rebuild()
                built += 1
            todo.extend(f.annotation for f in node.model_fields.values())
    return built


complete_models(TResponseOutputItem, Response, InputTokensDetails, OutputTokensDetails)


class ServerStateRefused(ValueError):
    """A model request that depends on server-side state (a stored response, conversation
    or prompt; a hosted tool): the record cannot hold it, so capture refuses it."""


def _json(value: Any) -> Any:
    return to_jsonable_python(value, exclude_none=False)


def model_request(
    system_instructions: str | None,
    input: str | list[TResponseInputItem],
    model_settings: ModelSettings,
    tools: Sequence[Any],
    output_schema: AgentOutputSchemaBase | None,
    handoffs: Sequence[Handoff[Any, Any]],
    *,
    previous_response_id: str | None = None,
    conversation_id: str | None = None,
    prompt: ResponsePromptParam | None = None,
) -> dict[str, Any]:
    """The key of one ``Model.get_response`` call: what decides the answer, as JSON.
    Left out: the tracing mode and the per-run ``prompt_cache_key``. Refused
    (``ServerStateRefused``): a call that depends on server-side state."""
    if previous_response_id is not None or conversation_id is not None:
        raise ServerStateRefused("the model call continues a stored response or conversation")
    if prompt is not None:
        raise ServerStateRefused("the model call uses a stored prompt")
    hosted = [t for t in tools if not isinstance(t, FunctionTool)]
    if hosted:
        raise ServerStateRefused("the model call offers hosted tools, which run inside it")
    settings = _json(model_settings.to_json_dict())
    extra = settings.get("extra_args")
    if isinstance(extra, dict):
        extra.pop("prompt_cache_key", None)
        settings["extra_args"] = extra or None
    schema = None
    if output_schema is not None:
        schema = {
            "name": output_schema.name(),
            "plain_text": output_schema.is_plain_text(),
            "strict": output_schema.is_strict_json_schema(),
            "schema": None if output_schema.is_plain_text() else output_schema.json_schema(),
        }
    return {
        "system_instructions": system_instructions,
        "input": _json(input),
        "model_settings": settings,
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.params_json_schema,
                "strict": t.strict_json_schema,
            }
            for t in tools
        ],
        "output_schema": schema,
        "handoffs": [
            {
                "name": h.tool_name,
                "description": h.tool_description,
                "parameters": h.input_json_schema,
            }
            for h in handoffs
        ],
    }


# The layouts a JSON text is recognised in, each rebuilt exactly: compact, as the SDK
# writes arguments; spaced, as ``json.dumps`` does by default; indented, as a real
# model's structured answer comes (llama.cpp's server). A text in any other layout stays
# text: recorded exactly, but its members are not addressable.
_LAYOUTS: dict[str, dict[str, Any]] = {
    "compact": {"separators": (",", ":")},
    "spaced": {},
    "indented": {"indent": 2},
}


def _as_value(text: str) -> tuple[Any, str | None]:
    """A JSON object's text as its value (so an intervention can address its members)
    and the layout that gives the text back exactly; else the text, and no layout."""
    try:
        value = json.loads(text)
    except ValueError:
        return text, None
    if isinstance(value, dict):
        for name, layout in _LAYOUTS.items():
            if json.dumps(value, ensure_ascii=False, **layout) == text:
                return value, name
    return text, None


def _as_text(value: Any, layout: Any) -> str:
    if isinstance(value, str):
        return value
    if layout not in _LAYOUTS:
        raise ValueError("the record names no known JSON layout")
    return json.dumps(value, ensure_ascii=False, **_LAYOUTS[layout])


def _dump_text(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data`` with its text member ``key`` as a value where it is JSON; the layout is
    kept beside it (``key_layout``) unless compact."""
    value, layout = _as_value(data[key])
    data = {**data, key: value}
    if layout not in (None, "compact"):
        data[f"{key}_layout"] = layout
    return data


def _load_text(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    data = dict(data)
    layout = data.pop(f"{key}_layout", "compact")
    data[key] = _as_text(data[key], layout)
    return data


def _positions(values: Sequence[Any]) -> dict[str, Any]:
    return {str(i): v for i, v in enumerate(values)}


def _listed(values: Mapping[str, Any]) -> list[Any]:
    return [values[k] for k in sorted(values, key=int)]


def _dump_item(item: TResponseOutputItem) -> dict[str, Any]:
    data: dict[str, Any] = item.model_dump(mode="json", by_alias=True)
    if data.get("type") == "function_call" and isinstance(data.get("arguments"), str):
        data = _dump_text(data, "arguments")
    if data.get("type") == "message" and isinstance(data.get("content"), list):
        parts = []
        for part in data["content"]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part = _dump_text(part, "text")
            parts.append(part)
        data["content"] = _positions(parts)
    return data


def _load_item(data: Mapping[str, Any]) -> TResponseOutputItem:
    item = dict(data)
    if item.get("type") == "function_call":
        item = _load_text(item, "arguments")
    if item.get("type") == "message" and isinstance(item.get("content"), dict):
        item["content"] = [
            _load_text(part, "text") if "text" in part else part
            for part in _listed(item["content"])
        ]
    return cast(TResponseOutputItem, _ITEM.validate_python(item))


def dump_response(response: ModelResponse) -> dict[str, Any]:
    """A ``ModelResponse`` as the MODEL boundary's response fields: each output item by
    its pydantic ``model_dump`` at its position (``/output/0``), a function call's
    arguments and a message's text as JSON values where they are JSON in a known layout."""
    return {
        "output": _positions([_dump_item(item) for item in response.output]),
        "usage": serialize_usage(response.usage),
        "response_id": response.response_id,
        "request_id": response.request_id,
        "raw_usage": response.raw_usage,
    }


def load_response(fields: Mapping[str, Any]) -> ModelResponse:
    """The ``ModelResponse`` ``dump_response`` recorded."""
    return ModelResponse(
        output=[_load_item(item) for item in _listed(fields["output"])],
        usage=deserialize_usage(fields["usage"]),
        response_id=fields["response_id"],
        request_id=fields["request_id"],
        raw_usage=fields["raw_usage"],
    )
