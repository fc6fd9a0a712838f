"""The chat model, declared hosted: one MODEL boundary, through LangChain's LLM cache.

A compiled graph holds its chat model inside its nodes (``create_agent``'s model node,
a hand-written node's closure); after compilation nothing replaces it. What every chat
model consults before it calls its provider is the process's LLM cache
(``langchain_core.globals.set_llm_cache``): ``BaseChatModel._agenerate_with_cache`` asks
``alookup(prompt, llm_string)`` first and, on a miss, calls the provider and hands the
answer to ``aupdate``. During a run with a declared model the cache is ``RunCache``:

* capture: ``alookup`` misses; ``aupdate`` records the provider's answer through
  ``ctx.acall`` (the live function returns the answer already in hand);
* replay: ``alookup`` asks ``ctx.acall`` and answers with the record (or an
  intervention); the provider is never called. A request the record lacks is the
  engine's ``Unservable``, naming the call.

Request ``{"messages", "model"}``: the prompt (the messages without ids, in LangChain's
codec, ``dumps``) normalised, and the model's settings string with object addresses
(``at 0x...``, which differ between processes) taken out. Response ``{"message",
"calls"}``: the AI message in LangChain's codec (``dumpd``/``load``) with each tool-call
proposal's arguments lifted into ``calls`` by name (``quote``, ``quote#1``...), so an
intervention addresses them by pointer.

Not covered (documented): a model built with ``cache=False`` or its own cache skips the
global cache; a model call that streams (``stream()``, ``astream()``,
``streaming=True``) is refused (``NoStreaming``): its tokens would reach the agent
before the boundary holds the answer.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.load import dumpd, load
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, Generation

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy
from ._codec import normalise

__all__ = [
    "MAX_SAME_CALLS",
    "NoStreaming",
    "RunCache",
    "decode_response",
    "encode_response",
    "model_request",
    "model_spec",
]

# calls of one tool in one model answer an intervention can address: name, name#1...
MAX_SAME_CALLS = 8
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def model_request(prompt: str, llm_string: str) -> dict[str, Any]:
    """The request a model call is recorded under (the cache's two arguments)."""
    return {
        "messages": normalise(json.loads(prompt)),
        "model": _ADDRESS.sub("", llm_string),
    }


def _call_keys(calls: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, int] = {}
    keys = []
    for call in calls:
        name = str(call["name"])
        n = seen.get(name, 0)
        seen[name] = n + 1
        keys.append(name if n == 0 else f"{name}#{n}")
    return keys


def encode_response(message: AIMessage) -> dict[str, Any]:
    """An AI message as the boundary records it: ``message`` (``dumpd``) with each tool
    call's arguments lifted into ``calls``."""
    encoded: dict[str, Any] = json.loads(json.dumps(dumpd(message)))
    kwargs = encoded["kwargs"]
    kwargs.pop("id", None)  # generated per run; the replayed message gets its own
    calls: dict[str, Any] = {}
    proposals = kwargs.get("tool_calls") or []
    for call, key in zip(proposals, _call_keys(proposals), strict=True):
        calls[key] = call["args"]
        call["args"] = None
    # the provider's raw form of the calls repeats them: rebuilt from ``tool_calls``
    kwargs.get("additional_kwargs", {}).pop("tool_calls", None)
    return {"message": encoded, "calls": calls}


def decode_response(recorded: Mapping[str, Any]) -> AIMessage:
    """The ``AIMessage`` of a recorded (or intervened) answer."""
    encoded = json.loads(json.dumps(recorded["message"]))  # a private copy
    proposals = encoded["kwargs"].get("tool_calls") or []
    for call, key in zip(proposals, _call_keys(proposals), strict=True):
        call["args"] = recorded["calls"][key]
    with warnings.catch_warnings():
        # ``load`` is marked beta; the warning is about its future, not this input
        warnings.filterwarnings("ignore", message="The function `load` is in beta")
        message = load(encoded, allowed_objects="messages")
    if not isinstance(message, AIMessage):
        raise ValueError("a recorded model answer is not an AI message")
    return message


def model_spec(name: str, tools: Mapping[str, Any], rule: FieldPolicy) -> BoundarySpec:
    """The MODEL boundary: its typed output is the tool-call proposals' arguments, each
    with its tool's argument schema (``tools``: name -> JSON schema)."""
    proposals: dict[str, Any] = {}
    for tool_name, parameters in tools.items():
        for n in range(MAX_SAME_CALLS):
            proposals[tool_name if n == 0 else f"{tool_name}#{n}"] = parameters
    return BoundarySpec(
        kind=StepKind.MODEL,
        name=name,
        request={"messages": rule, "model": rule},
        response={"message": rule, "calls": rule},
        schema_id="langchain-ai-message",
        json_schema={
            "type": "object",
            "properties": {
                "calls": {"type": "object", "properties": proposals},
                # a text answer: ``/message/kwargs/content``
                "message": {
                    "type": "object",
                    "properties": {
                        "kwargs": {"type": "object", "properties": {"content": {"type": "string"}}}
                    },
                },
            },
        },
    )


class RunCache(BaseCache):
    """The LLM cache during a run with a declared model: the run's ``ctx`` answers
    (module docstring). Outside a run (``bind``), it defers to the cache it replaced."""

    def __init__(self, previous: BaseCache | None) -> None:
        self.previous = previous
        self._run: ContextVar[tuple[Context, BoundarySpec] | None] = ContextVar(
            "replay_enclave_langchain_model", default=None
        )

    def bind(self, ctx: Context, spec: BoundarySpec) -> Any:
        """Route the model calls of the current task (and those it starts) to ``ctx``."""
        return self._run.set((ctx, spec))

    def unbind(self, token: Any) -> None:
        self._run.reset(token)

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Generation] | None:
        if self._run.get() is not None:
            raise NoStreaming("a synchronous model call in an asynchronous run is not routed")
        return self.previous.lookup(prompt, llm_string) if self.previous else None

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Generation]) -> None:
        if self._run.get() is not None:
            raise NoStreaming("a synchronous model call in an asynchronous run is not routed")
        if self.previous is not None:
            self.previous.update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        if self.previous is not None:
            self.previous.clear(**kwargs)

    async def alookup(self, prompt: str, llm_string: str) -> Sequence[Generation] | None:
        bound = self._run.get()
        if bound is None:
            return await self.previous.alookup(prompt, llm_string) if self.previous else None
        ctx, spec = bound
        if not ctx.serves_record:
            return None  # capture: the provider answers; ``aupdate`` records it

        def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            raise AssertionError("a replay never calls the provider")  # pragma: no cover

        answer = await ctx.acall(spec, model_request(prompt, llm_string), live=live)
        return [ChatGeneration(message=decode_response(answer))]

    async def aupdate(self, prompt: str, llm_string: str, return_val: Sequence[Generation]) -> None:
        bound = self._run.get()
        if bound is None:
            if self.previous is not None:
                await self.previous.aupdate(prompt, llm_string, return_val)
            return
        ctx, spec = bound
        if len(return_val) != 1 or not isinstance(return_val[0], ChatGeneration):
            raise ValueError("a model answer of other than one chat generation is not recorded")
        message = return_val[0].message
        if not isinstance(message, AIMessage):
            raise ValueError("a model answer that is not an AI message is not recorded")
        encoded = encode_response(message)
        await ctx.acall(spec, model_request(prompt, llm_string), live=lambda _r: encoded)


class NoStreaming(ValueError):
    """A model call that streams, or that bypasses the asynchronous cache path."""


class StreamGuard(AsyncCallbackHandler):
    """Refuses a streamed model call: a token is the answer arriving outside the
    boundary. ``raise_error``: the framework re-raises it instead of logging it."""

    raise_error = True

    async def on_llm_new_token(self, token: Any, **kwargs: Any) -> None:
        raise NoStreaming("streamed model calls are not captured; call the model with ainvoke")
