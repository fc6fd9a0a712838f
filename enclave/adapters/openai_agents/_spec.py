"""``agent_spec``: an ``AgentSpec`` derived from an ``agents.Agent``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.models.interface import Model
from agents.models.multi_provider import MultiProvider
from agents.tracing import set_trace_provider
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from enclave.adapters._outcome import outcome_policies

from ...capture import AgentSpec, BoundarySpec, Context, FieldPolicy, policy
from ._codec import ServerStateRefused
from ._model import RoutedModel, model_boundary
from ._tools import Routes, return_adapter, tool_boundary, walk
from ._tracing import SilentTraceProvider

__all__ = ["agent_spec", "from_object"]

_SEALED = policy("confidential")
_ADAPTER = __name__.rpartition(".")[0]  # the package


def _proposal(output: Any) -> Any:
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return to_jsonable_python(dataclasses.asdict(output))
    return to_jsonable_python(output)


def _takes_ctx(model: Callable[..., Model]) -> bool:
    try:
        return bool(inspect.signature(model).parameters)
    except (TypeError, ValueError):  # a callable without a signature: made without one
        return False


def _maker(model: Callable[..., Model]) -> Callable[[Context], Model]:
    """The run's model from its ``ctx``, which a ``model`` taking an argument is given."""
    if _takes_ctx(model):
        return model
    return lambda _ctx: model()


def agent_spec(
    agent: Agent[Any],
    *,
    name: str,
    version: str,
    model: Callable[[], Model] | Callable[[Context], Model],
    decision: str,
    hosted: str | None = None,
    score: str | None = None,
    score_bounds: tuple[float, float] = (0.0, 1.0),
    agents: Sequence[Agent[Any]] = (),
    inputs: Mapping[str, FieldPolicy] | None = None,
    context: Callable[[Context, Mapping[str, Any]], Any] | None = None,
    boundaries: Sequence[BoundarySpec] = (),
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    mcp_targets: Mapping[str, Any] | None = None,
    mcp_schemas: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    max_turns: int = 10,
    module: str | None = None,
    **declared: Any,
) -> AgentSpec:
    """An ``AgentSpec`` that runs ``agent`` with ``Runner.run(agent, inputs["input"])``.

    ``model`` makes the run's model, fresh each run (``lambda: ScriptedModel([...])``, or a
    hosted model); ``hosted`` names its alias when the model is a boundary, else it runs
    as agent code. A ``model`` that takes an argument is given the run's ``ctx``, to build
    its client on the wire adapter (``enclave.adapters.http.async_client(ctx, BOUNDARY)``,
    the boundary declared in ``boundaries``): the model is then captured at the wire,
    where governed inference can ask it again. ``decision`` (and optionally ``score``,
    within ``score_bounds``) names the member of the final output that is the decision;
    the outcome's proposal is the whole final output. ``agents``: further agents reachable
    only through ``Handoff`` objects (their tools are declared too). ``context`` builds the
    SDK's run context from the run's ``ctx`` and inputs: code the SDK hands it to (tools
    taking a ``RunContextWrapper``, dynamic instructions, hooks) crosses the further
    ``boundaries`` it declares with ``await ctx.acall(...)``. ``tool_schemas`` gives a
    tool's output JSON Schema where its return type does not. Each of the agents'
    ``mcp_servers`` is one MCP boundary named as the server (``enclave.adapters.mcp``):
    ``mcp_targets`` names, by server name, what a capture connects to where the server's own
    type does not say (an in-process ``mcp.server.MCPServer``...); ``mcp_schemas`` gives, by
    server name, its tools' output schemas. ``module`` is the agent's module (by default the
    caller's): the spec's import reference and, with this adapter, its code identity.
    Other keywords go to ``AgentSpec``."""
    everyone = walk([agent, *agents])
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
            tools[tool.name] = (tool_boundary(tool, output_schema=schema), return_adapter(tool))
            function_tools.append(tool)
    servers: dict[str, tuple[BoundarySpec, Any]] = {}
    if any(member.mcp_servers for member in everyone):
        # the MCP adapter (its SDK warmed at import) only for agents that use MCP
        from ._mcp import mcp_boundaries

        servers = mcp_boundaries(everyone, targets=mcp_targets or {}, schemas=mcp_schemas or {})
    if set(servers) & set(tools):
        raise ValueError("an MCP server's name is taken by a function tool")
    declared_boundaries = [
        *(spec for spec, _ in tools.values()),
        *(spec for spec, _ in servers.values()),
        *boundaries,
    ]
    if hosted is not None and _takes_ctx(model):
        raise ValueError("a model captured at the wire is not also a hosted boundary")
    made = _maker(model)
    model_spec = None
    if hosted is not None:
        model_spec = model_boundary(hosted, tools=function_tools, outputs=outputs)
        declared_boundaries.append(model_spec)

    async def run(ctx: Context, run_inputs: Mapping[str, Any]) -> dict[str, Any]:
        if ctx.serves_record:  # before the run first asks the SDK for a provider
            set_trace_provider(SilentTraceProvider())
        routes = Routes(ctx, tools)
        async with AsyncExitStack() as stack:
            # every MCP server's session opens here, in the run's own task (the SDK's
            # tools then call it from theirs), and closes when the run ends
            for member in everyone:
                for server in member.mcp_servers:
                    if id(server) in routes.mcp_servers:
                        continue
                    from ._mcp import RoutedMCPServer

                    spec, target = servers[server.name]
                    routed_server = RoutedMCPServer(server, ctx, spec, target)
                    await routed_server.connect()
                    stack.push_async_callback(routed_server.cleanup)
                    routes.mcp_servers[id(server)] = routed_server
            routed = routes.agent(agent)
            # the SDK wraps what a tool raised (``UserError(...) from e``); a replay reads
            # its own abstention (a call it cannot serve, a divergence) through the chain
            result = await Runner.run(
                routed,
                run_inputs["input"],
                context=None if context is None else context(ctx, run_inputs),
                max_turns=max_turns,
                run_config=RunConfig(
                    model=RoutedModel(made(ctx), ctx, model_spec), tracing_disabled=True
                ),
            )
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

    function: Any = run  # asynchronous: ``AgentSpec.run`` runs it on a loop of its own
    # the agent's module is the caller's: its import reference and its code identity
    run.__module__ = module or sys._getframe(1).f_globals.get("__name__", __name__)
    run.__qualname__ = run.__name__ = "run"
    code_modules = tuple(declared.pop("code_modules", ()))
    # imported once by the replay worker's template, not in every run: the SDK (seconds
    # of imports) and this adapter, whose import builds what the SDK builds lazily
    frameworks = (*declared.pop("frameworks", ()), "agents", _ADAPTER)
    if servers:  # the MCP SDK and adapter too, imported (and warmed) once
        frameworks += ("mcp", "enclave.adapters.mcp", f"{_ADAPTER}._mcp")
    outcome_fields = outcome_policies(_SEALED, scored=score is not None)
    return AgentSpec(
        name=name,
        version=version,
        function=function,
        inputs=dict(inputs) if inputs is not None else {"input": _SEALED},
        outcome=outcome_fields,
        score_bounds=score_bounds if score is not None else None,
        boundaries=tuple(declared_boundaries),
        code_modules=code_modules,
        frameworks=frameworks,
        **declared,
    )


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
    """The spec ``replay-enclave capture module:attr`` builds for an ``agents.Agent``
    (entry-point group ``replay_enclave.adapters``); ``inputs.input`` is the run's input.
    The agent carries its model: a ``Model`` object runs as agent code, a fresh copy each
    run (a scripted model's script starts over); a model named by string is hosted and
    needs its boundary's alias (``model``), resolved by the SDK's default provider."""
    if not isinstance(agent, Agent):
        raise TypeError("the object is not an Agents SDK Agent")
    carried = agent.model
    # the run's one model stands for every agent's: an agent reached by handoff with a
    # model of its own would run on another model than it does unchanged
    if any(other.model is not carried for other in walk([agent])):
        raise ValueError("agents reached by handoff carry other models: write an agent_spec")
    if isinstance(carried, Model):
        if model is not None:
            raise ValueError("an in-process model object is agent code, not a hosted boundary")
        return agent_spec(
            agent,
            name=name,
            version=version,
            model=lambda: copy.deepcopy(carried),
            decision=decision,
            score=score,
            module=module,
        )
    if model is None:
        raise ValueError("the agent's model is hosted: name its boundary ('model')")
    named = carried if isinstance(carried, str) else None
    return agent_spec(
        agent,
        name=name,
        version=version,
        model=lambda: MultiProvider().get_model(named),
        hosted=model,
        decision=decision,
        score=score,
        module=module,
    )
