"""The key of a model call and the record of its answer, in the framework's own codec.

``model_request`` is what decides a ``Model.request`` answer, as JSON: the messages
(``ModelMessagesTypeAdapter``), the settings and the request parameters, normalised
(``normalise``: no timestamps, run or conversation ids, framework-generated tool-call
ids renumbered). ``encode_response`` records a ``ModelResponse`` as ``{"message",
"calls"}``, each tool call's arguments lifted into ``calls`` by key (``quote``,
``quote#1``...), and a structured-output answer written as text (``NativeOutput``)
kept verbatim beside its value; ``decode_response`` rebuilds an equal one, or the one
an intervention asks for.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pydantic
import pydantic_core
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings

__all__ = [
    "OUTPUT_TOOL",
    "decode_response",
    "encode_response",
    "jsonable",
    "model_request",
    "normalise",
]

GENERATED_ID_PREFIX = "pyd_ai_"  # ``pydantic_ai._utils.generate_tool_call_id``
VOLATILE_KEYS = frozenset({"timestamp", "run_id", "conversation_id"})
OUTPUT_TOOL = "final_result"  # the output tool of a single ``output_type``


def normalise(value: Any) -> Any:
    """``value`` (JSON) without what differs between two identical runs: timestamps, run
    and conversation ids, and framework-generated tool-call ids (renumbered ``pyd_ai_#n``
    by first appearance, so which return answers which call stays in the key)."""
    ids: dict[str, str] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, item in node.items():
            if key in VOLATILE_KEYS:
                continue
            if key == "tool_call_id" and isinstance(item, str) and _generated(item):
                item = ids.setdefault(item, f"{GENERATED_ID_PREFIX}#{len(ids)}")
            out[key] = walk(item)
        return out

    return walk(value)


def _generated(tool_call_id: str) -> bool:
    tail = tool_call_id.removeprefix(GENERATED_ID_PREFIX)
    return tail != tool_call_id and len(tail) == 32 and all(c in "0123456789abcdef" for c in tail)


def _call_keys(parts: list[Any]) -> list[str | None]:
    """The ``calls`` key of each part: ``name``, ``name#1``... for tool calls, else None."""
    seen: dict[str, int] = {}
    keys: list[str | None] = []
    for part in parts:
        if part.get("part_kind") != "tool-call":
            keys.append(None)
            continue
        name = str(part["tool_name"])
        n = seen.get(name, 0)
        seen[name] = n + 1
        keys.append(name if n == 0 else f"{name}#{n}")
    return keys


def model_request(
    messages: list[ModelMessage],
    model_settings: ModelSettings | None,
    parameters: ModelRequestParameters,
) -> dict[str, Any]:
    """The request a model call is recorded under: the messages in the framework's codec,
    the settings and the request parameters (tool definitions, output mode), normalised
    and the same in every process."""
    request: dict[str, Any] = normalise(
        {
            "messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
            "settings": jsonable(model_settings),
            "parameters": jsonable(parameters),
        }
    )
    return request


def encode_response(response: ModelResponse) -> dict[str, Any]:
    """A model response as the boundary records it: ``message`` (the framework's codec)
    with every tool call's arguments lifted into ``calls`` by key."""
    message = ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]
    calls: dict[str, Any] = {}
    for part, key in zip(message["parts"], _call_keys(message["parts"]), strict=True):
        if key is None:
            continue
        args = part["args"]
        if isinstance(args, str):  # a provider's JSON text: kept verbatim beside its value
            calls[key] = json.loads(args) if args else {}
        else:
            calls[key] = args if args is not None else {}
            part["args"] = None
    structured = _structured_text(message["parts"])
    if structured is not None:  # the text kept verbatim beside its value, as arguments are
        calls[OUTPUT_TOOL] = json.loads(message["parts"][structured]["content"])
    return {"message": message, "calls": calls}


def _structured_text(parts: list[Any]) -> int | None:
    """The position of the answer's typed final result written as text — the provider's
    structured-output mode (``NativeOutput``, ``PromptedOutput``): the one text part, a
    JSON object, where the output tool was not called — else None."""
    if any(part.get("tool_name") == OUTPUT_TOOL for part in parts):
        return None
    texts = [i for i, part in enumerate(parts) if part.get("part_kind") == "text"]
    if len(texts) != 1:
        return None
    try:
        value = json.loads(parts[texts[0]]["content"])
    except ValueError:
        return None
    return texts[0] if isinstance(value, dict) else None


def decode_response(recorded: Mapping[str, Any]) -> ModelResponse:
    """The ``ModelResponse`` of a recorded (or intervened) answer: equal to the captured
    one unless an intervention changed a call's arguments."""
    message = json.loads(json.dumps(recorded["message"]))  # a private copy
    calls = recorded["calls"]
    for part, key in zip(message["parts"], _call_keys(message["parts"]), strict=True):
        if key is None:
            continue
        args = calls[key]
        text = part["args"]
        if isinstance(text, str):
            if (json.loads(text) if text else {}) != args:
                part["args"] = json.dumps(args)
        else:
            part["args"] = args
    structured = _structured_text(message["parts"])
    if structured is not None and OUTPUT_TOOL in calls:
        part = message["parts"][structured]
        if json.loads(part["content"]) != calls[OUTPUT_TOOL]:
            part["content"] = json.dumps(calls[OUTPUT_TOOL])
    (response,) = ModelMessagesTypeAdapter.validate_python([message])
    assert isinstance(response, ModelResponse)
    return response


def jsonable(value: Any) -> Any:
    """``value`` as JSON, the same in every process: a set's members are sorted (their
    iteration order follows the process's string hash seed)."""
    return pydantic_core.to_jsonable_python(_ordered(value))


def _ordered(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        members = [_ordered(member) for member in value]
        return sorted(members, key=lambda m: json.dumps(jsonable(m), sort_keys=True))
    if isinstance(value, dict):
        return {key: _ordered(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_ordered(item) for item in value]
    if isinstance(value, pydantic.BaseModel):
        return _ordered(value.model_dump(mode="python", by_alias=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # public fields (the private ones of the framework's dataclasses are telemetry)
        return {
            f.name: _ordered(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    return value
