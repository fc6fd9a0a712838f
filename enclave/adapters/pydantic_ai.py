"""pydantic-ai agents, captured and replayed unchanged (``docs/adapters/pydantic-ai.md``).

``agent_spec(agent, name=..., version=..., decision=...)`` derives an ``AgentSpec`` from
a ``pydantic_ai.Agent``. Its run function is asynchronous: it runs
``agent.run(inputs["input"], deps=...)`` with two of the framework's own seams in place.

* Tools: a capability (``AbstractCapability.wrap_tool_execute``, passed per run with
  ``capabilities=[...]``) sends every function tool's execution through ``ctx.acall``:
  one TOOL boundary per tool, request ``{"args"}`` (the validated arguments), response
  ``{"output"}`` (the return value as JSON, rebuilt with the tool's return annotation).
  Output tools never reach this hook: they are the model's answer, not a crossing.
* The model, when declared hosted (``model="planner"``): ``agent.override(model=...)``
  puts a ``WrapperModel`` in its place whose ``request`` goes through ``ctx.acall``:
  request ``{"messages", "settings", "parameters"}``, response ``{"message", "calls"}``,
  messages in the framework's codec (``ModelMessagesTypeAdapter``). ``calls`` holds each
  tool call's arguments by tool name (``final_result``, ``quote``, ``quote#1``...), so
  an intervention addresses the model's typed output by pointer (``/calls/final_result/
  decision``) — also where the provider's structured-output mode (``NativeOutput``)
  answers it as JSON text, kept verbatim beside its value. An in-process model
  (``FunctionModel``, ``TestModel``) runs as agent code.
* The model, captured at the wire (``wire_model=factory``): each run puts
  ``factory(ctx)`` in the agent's place (``agent.override(model=...)``), a model whose
  client the factory builds on the wire adapter (``enclave.adapters.http.async_client``,
  its boundary declared in ``boundaries``): each exchange with the endpoint is recorded
  as it was sent and answered, the form governed inference can ask again.

Invariants:

1. Every content field is sealed (``classification``, confidential by default); only
   boundary and tool names are in clear.
2. Requests are normalised: timestamps, ``run_id``/``conversation_id`` and tool-call ids
   the framework generated (``pyd_ai_<uuid>``) are left out of the request (ids are
   numbered by first appearance instead); a provider's own ids are kept.
3. What the agent is handed is always the decoded record, at capture as at replay, so
   both see equal objects.
4. A replay never goes live: model requests are disallowed
   (``override_allow_model_requests``), so a hosted model that is no declared boundary
   raises; an instrumented agent (OpenTelemetry egress) is refused. The one exception is
   the wire model's own request, and what it awaits (``_WireModel``): the allowance is a
   context variable of that request, so no other task, nor the run's own code before or
   after the request, is allowed meanwhile; the wire client it goes out through serves
   the record and asks nothing the record does not hold.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import sys
import typing
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

import pydantic
import pydantic_ai
import pydantic_core
from pydantic_ai import Agent, NativeOutput, PromptedOutput, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import (
    Model,
    ModelRequestParameters,
    StreamedResponse,
    infer_model,
    override_allow_model_requests,
)
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from enclave.adapters._schemas import inline_refs
from enclave.capture import AgentSpec, BoundarySpec, Context, FieldPolicy, policy
from ledger import StepKind

from . import _warm_ups

__all__ = [
    "MAX_SAME_CALLS",
    "agent_spec",
    "decode_response",
    "encode_response",
    "from_object",
    "model_request",
    "normalise",
]

IN_PROCESS_MODELS = (FunctionModel, TestModel)
GENERATED_ID_PREFIX = "pyd_ai_"  # ``pydantic_ai._utils.generate_tool_call_id``
VOLATILE_KEYS = frozenset({"timestamp", "run_id", "conversation_id"})
OUTPUT_TOOL = "final_result"  # the output tool of a single ``output_type``
# calls of one tool in one model response an intervention can address: name, name#1...
MAX_SAME_CALLS = 8

Outcome = Callable[[Any], Any]


# -- normalisation and the codec ----------------------------------------------------------


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
            "settings": _jsonable(model_settings),
            "parameters": _jsonable(parameters),
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


def _jsonable(value: Any) -> Any:
    """``value`` as JSON, the same in every process: a set's members are sorted (their
    iteration order follows the process's string hash seed)."""
    return pydantic_core.to_jsonable_python(_ordered(value))


def _ordered(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        members = [_ordered(member) for member in value]
        return sorted(members, key=lambda m: json.dumps(_jsonable(m), sort_keys=True))
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


def _fingerprint(schema: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]


# -- boundaries derived from the agent --------------------------------------------------


class _Tool:
    """One function tool as a boundary: its spec and its return value's codec."""

    def __init__(self, tool: Any, rule: FieldPolicy) -> None:
        definition: ToolDefinition = tool.tool_def
        hints = typing.get_type_hints(tool.function_schema.function)
        returns = hints.get("return", Any)
        self.codec: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(returns)
        output = inline_refs(self.codec.json_schema(mode="serialization"))
        self.spec = BoundarySpec(
            kind=StepKind.TOOL,
            name=definition.name,
            request={"args": rule},
            response={"output": rule},
            schema_id=f"pydantic-ai-tool:{definition.name}",
            schema_version=_fingerprint(definition.parameters_json_schema),
            json_schema={"type": "object", "properties": {"output": output}},
        )
        self.parameters = inline_refs(definition.parameters_json_schema)


def _function_tools(agent: Agent[Any, Any], rule: FieldPolicy) -> dict[str, _Tool]:
    tools: dict[str, _Tool] = {}
    for toolset in agent.toolsets:
        if not isinstance(toolset, FunctionToolset):
            raise ValueError(
                "only function tools are derived: declare other toolsets' boundaries yourself"
            )
        for tool in toolset.tools.values():
            tools[tool.name] = _Tool(tool, rule)
    return tools


def _model_spec(
    name: str, agent: Agent[Any, Any], tools: Mapping[str, _Tool], rule: FieldPolicy
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


# -- the seams, per run -----------------------------------------------------------------


class _ToolBoundaries(AbstractCapability[Any]):
    """Every function tool's execution through ``ctx.acall`` (one run's capability)."""

    def __init__(self, ctx: Context, tools: Mapping[str, _Tool]) -> None:
        super().__init__()
        self._ctx = ctx
        self._tools = tools
        self.called: list[str] = []

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        tool = self._tools.get(tool_def.name)
        if tool is None:
            raise ValueError("a tool the agent spec does not declare was called")

        async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            result = await handler(args)
            return {"output": _jsonable(tool.codec.dump_python(result, by_alias=True))}

        self.called.append(tool_def.name)
        answer = await self._ctx.acall(tool.spec, {"args": _jsonable(args)}, live=live)
        return tool.codec.validate_python(answer["output"])


class _BoundaryModel(WrapperModel):
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


# Whether the current task is inside the wire model's request. A context variable: the
# task running the request sees it, and so do tasks the request itself starts; a task
# started before it (by a tool, by the run's own code) keeps its own value, False.
_IN_WIRE_REQUEST: ContextVar[bool] = ContextVar("replay_enclave_wire_request", default=False)


class _WireAllowance:
    """What ``pydantic_ai.models.ALLOW_MODEL_REQUESTS`` holds during a replay: true only
    inside the wire model's request. The framework's guard reads the setting as a truth
    value (``check_allow_model_requests``: ``if not ALLOW_MODEL_REQUESTS``), and it is one
    process-wide value: set to True around the request, it would also let through any
    model another task asks while the request awaits its answer."""

    def __bool__(self) -> bool:
        return _IN_WIRE_REQUEST.get()


@contextmanager
def _replay_guard() -> Iterator[None]:
    """Model requests disallowed for the run, except the wire model's own."""
    with override_allow_model_requests(typing.cast(bool, _WireAllowance())):
        yield


class _WireModel(WrapperModel):
    """The run's model captured at the wire: its requests go out through the client the
    factory built on the wire adapter, which records them (capture) or serves the record
    (replay). At replay its request, and no other, passes the framework's guard."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        token = _IN_WIRE_REQUEST.set(True)
        try:
            return await self.wrapped.request(messages, model_settings, model_request_parameters)
        finally:
            _IN_WIRE_REQUEST.reset(token)

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        raise NotImplementedError("streamed model requests are not captured; use agent.run")
        yield  # pragma: no cover - an async generator


def _with_ctx(deps: Callable[..., Any]) -> Callable[[Context, Mapping[str, Any]], Any]:
    """The run's dependencies from its ``ctx`` and inputs: a ``deps`` that takes two
    arguments is given both, one that takes one the inputs alone."""
    try:
        takes = len(inspect.signature(deps).parameters)
    except (TypeError, ValueError):  # a callable without a signature: the inputs alone
        takes = 1
    if takes >= 2:
        return deps
    return lambda _ctx, inputs: deps(inputs)


# -- the spec ---------------------------------------------------------------------------


def _reader(pick: str | Outcome | None) -> Outcome | None:
    if pick is None or callable(pick):
        return pick
    return lambda output: getattr(output, pick)


def agent_spec(
    agent: Agent[Any, Any],
    *,
    name: str,
    version: str,
    decision: str | Outcome,
    score: str | Outcome | None = None,
    model: str | None = None,
    wire_model: Callable[[Context], Model] | None = None,
    deps: Callable[[Mapping[str, Any]], Any]
    | Callable[[Context, Mapping[str, Any]], Any]
    | None = None,
    extra_inputs: tuple[str, ...] = (),
    boundaries: tuple[BoundarySpec, ...] = (),
    classification: str = "confidential",
    credentials: tuple[str, ...] = (),
    code_modules: tuple[str, ...] = (),
    frameworks: tuple[str, ...] = (),
    module: str | None = None,
) -> AgentSpec:
    """An ``AgentSpec`` for ``agent``. ``decision`` (and ``score``) name an attribute of
    the typed output, or compute it from the output. ``model`` declares the model a
    hosted boundary of that name; ``wire_model(ctx)`` instead makes each run's model, its
    client built on the wire adapter (``async_client(ctx, BOUNDARY, library="httpx2")``,
    ``BOUNDARY`` declared in ``boundaries``), so the model is captured at the wire, where
    governed inference can ask it again; without either the model must run in process
    (``FunctionModel``, ``TestModel``). ``deps(inputs)`` builds the run's dependencies,
    or ``deps(ctx, inputs)`` when it takes two arguments: code the framework hands them
    to (tools, instructions) then crosses the further ``boundaries`` it declares with
    ``await ctx.acall(...)``. ``extra_inputs`` are input fields besides ``input`` (the
    prompt), sealed alike. ``frameworks`` are further installed packages the agent's
    module imports (a hosted model's client, ``openai``): the replay worker's template
    imports them once. ``module`` is the module that holds the agent (by default the
    caller's): the run is attributed to it, so the specimen records where to import the
    spec from and its code identity covers the agent's code (and this adapter's)."""
    if module is None:
        module = str(sys._getframe(1).f_globals["__name__"])
    rule = policy(classification)
    tools = _function_tools(agent, rule)
    declared = tuple(tool.spec for tool in tools.values())
    if any(boundary.name in tools for boundary in boundaries):
        raise ValueError("a declared boundary's name is taken by a tool")
    model_spec = None
    if wire_model is not None:
        if model is not None:
            raise ValueError("a model captured at the wire is not also a hosted boundary")
        if not any(boundary.kind is StepKind.MODEL for boundary in boundaries):
            raise ValueError(
                "a model captured at the wire crosses a model boundary declared in "
                "boundaries (enclave.adapters.http.http_boundary)"
            )
    elif model is not None:
        if model in tools:
            raise ValueError("the model boundary's name is taken by a tool")
        model_spec = _model_spec(model, agent, tools, rule)
        declared += (model_spec,)
    elif not isinstance(agent.model, IN_PROCESS_MODELS):
        raise ValueError(
            "a model that does not run in process must be declared a boundary (model=...)"
        )
    declared += boundaries
    decide, scored = _reader(decision), _reader(score)
    assert decide is not None
    dependencies = _with_ctx(deps) if deps is not None else None

    async def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        if ctx.serves_record and agent.instrument:
            raise ValueError("an instrumented agent is not replayed (its spans leave the run)")
        # Open the run's id stream first. pydantic-graph draws placeholder node ids
        # (uuid4) when pydantic-ai first builds an agent's graph in a process (an
        # lru_cache), so whether a run draws an id at all would depend on whether its
        # process was warm: a capture in a warm process and a replay in a cold worker
        # would disagree on the stream's recorded opening. Ids are in no request.
        uuid.uuid4()
        capability = _ToolBoundaries(ctx, tools)
        if wire_model is not None:
            hosted: Any = agent.override(model=_WireModel(wire_model(ctx)))
        elif model_spec is not None:
            hosted = agent.override(model=_BoundaryModel(_model_of(agent), ctx, model_spec))
        else:
            hosted = nullcontext()
        guard = _replay_guard() if ctx.serves_record else nullcontext()
        with guard, hosted:
            result = await agent.run(
                inputs["input"],
                deps=dependencies(ctx, inputs) if dependencies is not None else None,
                capabilities=[capability],
            )
        output = result.output
        outcome = {
            "decision": decide(output),
            "proposal": _jsonable(output),
            "evidence": capability.called,
        }
        if scored is not None:  # a categorical agent's outcome carries no score at all
            outcome["score"] = scored(output)
        return outcome

    run.__module__ = module  # the agent's module: its import reference, its code
    return AgentSpec(
        name=name,
        version=version,
        # an asynchronous agent: ``AgentSpec.run`` runs it on an event loop of its own
        function=typing.cast(Callable[..., Mapping[str, Any]], run),
        inputs={"input": rule, **{field: rule for field in extra_inputs}},
        outcome={
            **({"score": policy("internal")} if score is not None else {}),
            "decision": policy("internal"),
            "proposal": rule,
            "evidence": policy("internal"),
        },
        score_bounds=(0.0, 1.0) if score is not None else None,
        boundaries=declared,
        credentials=credentials,
        code_modules=code_modules,
        # imported once by the replay worker's template, not in every run (the adapter
        # too: a project module, whose import settles the framework's lazy state)
        frameworks=("pydantic_ai", __name__, *frameworks),
    )


def _warm() -> None:
    """At import, outside any run: build what the framework builds lazily on its first
    run in a process, and turn its first-run banner off (``pydantic_ai.BANNER_ENABLED``,
    the documented switch). Both read the environment, once per process: inside a run,
    a run captured in a fresh process would read what a replay in a warm one does not
    (or the reverse). The schema builds read ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's
    plugin loader), the banner a list of variables naming coding agents. The price
    table (``genai_prices.data``, imported on first use) is the framework's import, not
    the agent's: a replay worker's template imports it once instead of every run."""
    import genai_prices.data  # noqa: F401 - see above

    pydantic_ai.BANNER_ENABLED = False
    sample = ModelResponse(parts=[ToolCallPart("tool", {"a": 1})])
    ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python([sample]))
    ToolReturnPart(tool_name="tool", content={"a": 1}).model_response_str()


def _model_of(agent: Agent[Any, Any]) -> Model:
    if agent.model is None:
        raise ValueError("the agent has no model to declare a boundary")
    return infer_model(agent.model)


_warm()  # at import: once per process, before any run


def _warm_template() -> None:
    """In a replay worker's template, once: a round of the framework (``_warm_ups``)."""
    _warm_ups.pydantic_ai()


def from_object(
    agent: Any,
    *,
    name: str,
    version: str,
    decision: str,
    score: str | None = None,
    model: str | None = None,
    module: str,
) -> AgentSpec:
    """The spec ``replay-enclave capture module:attr`` builds for a pydantic-ai ``Agent``
    (entry-point group ``replay_enclave.adapters``): ``inputs.input`` is the prompt and
    ``inputs.deps``, when the agent declares a ``deps_type``, its run's dependencies,
    validated into that type."""
    if not isinstance(agent, Agent):
        raise TypeError("the object is not a pydantic-ai Agent")
    declared = agent.deps_type is not type(None)
    return agent_spec(
        agent,
        name=name,
        version=version,
        decision=decision,
        score=score,
        model=model,
        deps=_deps_of(pydantic.TypeAdapter(agent.deps_type)) if declared else None,
        extra_inputs=("deps",) if declared else (),
        module=module,
    )


def _deps_of(adapter: pydantic.TypeAdapter[Any]) -> Callable[[Mapping[str, Any]], Any]:
    def deps(inputs: Mapping[str, Any]) -> Any:
        try:
            return adapter.validate_python(inputs.get("deps"))
        except pydantic.ValidationError:  # its text would echo the sealed input
            raise ValueError("the input's 'deps' does not fit the agent's deps_type") from None

    return deps
