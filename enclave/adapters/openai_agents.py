"""The OpenAI Agents SDK: an ``agents.Agent`` captured and replayed unchanged.

``agent_spec(agent, ...)`` derives an ``AgentSpec`` from the agent: its tools, those of the
agents it hands off to (and of further ``agents``), and the run. The run calls
``Runner.run`` on a copy of the agent whose tools cross the run's ``ctx``:

- every ``FunctionTool`` is one TOOL boundary (named as the tool). Its ``on_invoke_tool``
  is wrapped (``dataclasses.replace``, ``Agent.clone`` through the handoffs), so each call
  goes through ``ctx.acall``: the request is the tool's arguments, the response its
  output (``{"output": ...}``), both sealed. An intervention addresses the output by JSON
  Pointer (``/output/price``), as far as the tool's return type declares it;
- the model is the ``RunConfig(model=...)`` of the run: a fresh ``Model`` from the
  ``model`` factory each run, wrapped. With ``hosted=ALIAS`` the model is one MODEL
  boundary: each ``get_response`` goes through ``ctx.acall`` (recorded with the SDK's
  own pydantic ``model_dump`` of each output item, rebuilt into a ``ModelResponse`` at
  capture and replay alike). Without it the model runs as agent code (an in-process
  ``Model``, such as ``agents.testing.ScriptedModel``), at capture and replay alike.

Model requests are normalised (``model_request``): the per-run ``prompt_cache_key`` and
tracing are left out of the key. A request that depends on state the record cannot hold
— ``previous_response_id``, ``conversation_id``, a stored prompt, hosted tools that run
inside the model call — is refused at capture (``ServerStateRefused``): a replay could
serve its recorded answer, but no counterfactual past it would be auditable.

The SDK's tracing is off in every run (``RunConfig(tracing_disabled=True)``, and
``set_tracing_disabled(True)`` in a replay): traces would carry sealed content to an
exporter. A replay never calls the model or a tool: the record answers, and a call the
record lacks ends the branch. Credentials the model's client reads are the engine's to
serve (a placeholder at replay).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from agents import Agent, FunctionTool, Handoff, RunConfig, Runner, set_tracing_disabled
from agents.agent_output import AgentOutputSchemaBase
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.usage import deserialize_usage, serialize_usage
from openai.types.responses.response_prompt_param import ResponsePromptParam
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from ledger import StepKind, canonical_json

from ..errors import EnclaveError
from ..capture import AgentSpec, BoundarySpec, Context, FieldPolicy, policy

__all__ = [
    "ServerStateRefused",
    "agent_spec",
    "dump_response",
    "load_response",
    "model_boundary",
    "model_request",
    "tool_boundary",
]

_SEALED = policy("confidential")
_ITEM = TypeAdapter(TResponseOutputItem)
# output items and content parts an intervention can address by position (``/output/0``)
MAX_ITEMS = 8


class ServerStateRefused(ValueError):
    """A model request that depends on server-side state (a stored response, conversation
    or prompt; a hosted tool): the record cannot hold it, so capture refuses it."""


# -- tools -------------------------------------------------------------------------------


def _return_adapter(tool: FunctionTool) -> TypeAdapter[Any] | None:
    """A type adapter of the tool's declared return type, if the function declares one."""
    try:
        function = tool.__wrapped__
    except AttributeError:
        return None
    annotation = inspect.signature(function, eval_str=True).return_annotation
    if annotation in (inspect.Signature.empty, Any, None, type(None)):
        return None
    return TypeAdapter(annotation)


def _schema_version(schema: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(schema))).hexdigest()[:16]


def tool_boundary(
    tool: FunctionTool, *, fields: FieldPolicy = _SEALED, output_schema: Mapping[str, Any] | None = None
) -> BoundarySpec:
    """The TOOL boundary of one function tool: its arguments in, its output out, both
    sealed with ``fields``. The output's JSON Schema (what an intervention may change) is
    ``output_schema``, else the tool's ``output_json_schema``, else its return type's."""
    if output_schema is None:
        output_schema = tool.output_json_schema
    if output_schema is None:
        adapter = _return_adapter(tool)
        output_schema = {} if adapter is None else adapter.json_schema(mode="serialization")
    return BoundarySpec(
        kind=StepKind.TOOL,
        name=tool.name,
        request={"arguments": fields},
        response={"output": fields},
        schema_id=f"openai-agents:function_tool:{tool.name}",
        schema_version=_schema_version(tool.params_json_schema),
        json_schema={"type": "object", "properties": {"output": dict(output_schema)}},
    )


def _arguments(text: str) -> Any:
    """The tool's arguments as JSON (the model's text when it is not JSON)."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {"$text": text}


@dataclasses.dataclass
class _Run:
    """What one run routes through ``ctx``."""

    ctx: Context
    tools: Mapping[str, tuple[BoundarySpec, TypeAdapter[Any] | None]]
    evidence: list[str] = dataclasses.field(default_factory=list)
    routed: dict[int, Agent[Any]] = dataclasses.field(default_factory=dict)

    def tool(self, tool: FunctionTool) -> FunctionTool:
        if tool.name not in self.tools:
            raise ValueError("a function tool the agent spec does not declare")
        spec, adapter = self.tools[tool.name]
        original = tool.on_invoke_tool
        ctx, evidence = self.ctx, self.evidence

        async def invoke(tool_context: Any, arguments: str) -> Any:
            async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
                output = await original(tool_context, arguments)
                if adapter is not None and not isinstance(output, str):
                    return {"output": adapter.dump_python(output, mode="json")}
                return {"output": to_jsonable_python(output)}

            response = await ctx.acall(spec, {"arguments": _arguments(arguments)}, live=live)
            evidence.append(tool.name)
            output = response["output"]
            if adapter is not None and not isinstance(output, str):
                return adapter.validate_python(output)
            return output

        return dataclasses.replace(tool, on_invoke_tool=invoke)

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of ``agent`` (and of every agent it hands off to) whose function tools
        cross ``ctx``; one copy per agent, so handoff cycles close."""
        key = id(agent)
        if key in self.routed:
            return self.routed[key]
        clone = agent.clone()
        self.routed[key] = clone
        clone.tools = [self.tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
        clone.handoffs = [self.handoff(h) for h in agent.handoffs]
        return clone

    def handoff(self, target: Agent[Any] | Handoff[Any, Any]) -> Any:
        if isinstance(target, Agent):
            return self.agent(target)
        original = target.on_invoke_handoff

        async def invoke(run_context: Any, arguments: str) -> Any:
            return self.agent(await original(run_context, arguments))

        return dataclasses.replace(target, on_invoke_handoff=invoke)


def _walk(roots: Sequence[Agent[Any]]) -> list[Agent[Any]]:
    """Every agent reachable from ``roots`` through handoffs given as agents."""
    seen: dict[int, Agent[Any]] = {}
    todo = list(roots)
    while todo:
        agent = todo.pop()
        if id(agent) in seen:
            continue
        seen[id(agent)] = agent
        todo.extend(h for h in agent.handoffs if isinstance(h, Agent))
    return list(seen.values())


# -- the model ---------------------------------------------------------------------------


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
            {"name": h.tool_name, "description": h.tool_description, "parameters": h.input_json_schema}
            for h in handoffs
        ],
    }


def _compact(text: str) -> Any:
    """A JSON text as its value when dumping the value gives the text back exactly (so an
    intervention can address its members), else the text."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and json.dumps(value, ensure_ascii=False, separators=(",", ":")) == text:
        return value
    return text


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _positions(values: Sequence[Any]) -> dict[str, Any]:
    return {str(i): v for i, v in enumerate(values)}


def _listed(values: Mapping[str, Any]) -> list[Any]:
    return [values[k] for k in sorted(values, key=int)]


def _dump_item(item: TResponseOutputItem) -> dict[str, Any]:
    data: dict[str, Any] = item.model_dump(mode="json", by_alias=True)
    if data.get("type") == "function_call" and isinstance(data.get("arguments"), str):
        data["arguments"] = _compact(data["arguments"])
    if data.get("type") == "message" and isinstance(data.get("content"), list):
        parts = []
        for part in data["content"]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                part = {**part, "text": _compact(part["text"])}
            parts.append(part)
        data["content"] = _positions(parts)
    return data


def _load_item(data: Mapping[str, Any]) -> TResponseOutputItem:
    item = dict(data)
    if item.get("type") == "function_call":
        item["arguments"] = _text(item["arguments"])
    if item.get("type") == "message" and isinstance(item.get("content"), dict):
        item["content"] = [
            {**part, "text": _text(part["text"])} if "text" in part else part
            for part in _listed(item["content"])
        ]
    return _ITEM.validate_python(item)


def dump_response(response: ModelResponse) -> dict[str, Any]:
    """A ``ModelResponse`` as the MODEL boundary's response fields: each output item by
    its pydantic ``model_dump`` at its position (``/output/0``), a function call's
    arguments and a message's text as JSON values where they are compact JSON."""
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


class _RoutedModel(Model):
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


# -- the spec ----------------------------------------------------------------------------


def _enclave_cause(exc: BaseException) -> EnclaveError | None:
    """The enclave's own error among the causes of what the SDK raised, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, EnclaveError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _proposal(output: Any) -> Any:
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return _json(dataclasses.asdict(output))
    return _json(output)


def agent_spec(
    agent: Agent[Any],
    *,
    name: str,
    version: str,
    model: Callable[[], Model],
    decision: str,
    hosted: str | None = None,
    score: str | None = None,
    score_bounds: tuple[float, float] = (0.0, 1.0),
    agents: Sequence[Agent[Any]] = (),
    inputs: Mapping[str, FieldPolicy] | None = None,
    context: Callable[[Mapping[str, Any]], Any] | None = None,
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    max_turns: int = 10,
    module: str | None = None,
    **declared: Any,
) -> AgentSpec:
    """An ``AgentSpec`` that runs ``agent`` with ``Runner.run(agent, inputs["input"])``.

    ``model`` makes the run's model, fresh each run (``lambda: ScriptedModel([...])``, or a
    hosted model); ``hosted`` names its alias when the model is a boundary, else it runs
    as agent code. ``decision`` (and optionally ``score``, within ``score_bounds``) names
    the member of the final output that is the decision; the outcome's proposal is the
    whole final output. ``agents``: further agents reachable only through ``Handoff``
    objects (their tools are declared too). ``context`` builds the run context from the
    inputs. ``tool_schemas`` gives a tool's output JSON Schema where its return type does
    not. ``module`` is the agent's module (by default the caller's): the spec's import
reference and, with this adapter, its code identity. Other keywords go to
``AgentSpec``."""
    everyone = _walk([agent, *agents])
    tools: dict[str, tuple[BoundarySpec, TypeAdapter[Any] | None]] = {}
    function_tools: list[FunctionTool] = []
    outputs: list[Mapping[str, Any]] = []
    for member in everyone:
        if member.output_type is not None and isinstance(member.output_type, type):
            if issubclass(member.output_type, BaseModel):
                outputs.append(member.output_type.model_json_schema())
        for tool in member.tools:
            if not isinstance(tool, FunctionTool):
                raise ServerStateRefused(f"the agent's tool {type(tool).__name__} is hosted")
            if tool.name in tools:
                continue
            schema = (tool_schemas or {}).get(tool.name)
            tools[tool.name] = (tool_boundary(tool, output_schema=schema), _return_adapter(tool))
            function_tools.append(tool)
    boundaries = [spec for spec, _ in tools.values()]
    model_spec = None
    if hosted is not None:
        model_spec = model_boundary(hosted, tools=function_tools, outputs=outputs)
        boundaries.append(model_spec)

    async def run(ctx: Context, run_inputs: Mapping[str, Any]) -> dict[str, Any]:
        if ctx.serves_record:
            set_tracing_disabled(True)
        routes = _Run(ctx, tools)
        routed = routes.agent(agent)
        try:
            result = await Runner.run(
                routed,
                run_inputs["input"],
                context=None if context is None else context(run_inputs),
                max_turns=max_turns,
                run_config=RunConfig(
                    model=_RoutedModel(model(), ctx, model_spec), tracing_disabled=True
                ),
            )
        except Exception as exc:
            # the SDK wraps what a tool raised (``UserError(...) from e``): a replay's
            # own abstention (a call it cannot serve, a divergence) is the run's end
            cause = _enclave_cause(exc)
            if cause is None:
                raise
            raise cause from None
        proposal = _proposal(result.final_output)
        if not isinstance(proposal, dict) or decision not in proposal:
            raise ValueError("the final output has no such decision member")
        outcome: dict[str, Any] = {
            "decision": proposal[decision],
            "proposal": proposal,
            "evidence": routes.evidence,
        }
        if score is not None:
            outcome["score"] = proposal[score]
        return outcome

    # the agent's module is the caller's: its import reference and its code identity,
    # together with this adapter's
    run.__module__ = module or sys._getframe(1).f_globals.get("__name__", __name__)
    run.__qualname__ = run.__name__ = "run"
    code_modules = (*declared.pop("code_modules", ()), __name__)
    outcome_fields = {
        "decision": policy("internal"),
        "proposal": _SEALED,
        "evidence": policy("internal"),
    }
    if score is not None:
        outcome_fields["score"] = policy("internal")
    return AgentSpec(
        name=name,
        version=version,
        function=run,
        inputs=dict(inputs) if inputs is not None else {"input": _SEALED},
        outcome=outcome_fields,
        score_bounds=score_bounds if score is not None else None,
        boundaries=tuple(boundaries),
        code_modules=code_modules,
        **declared,
    )
