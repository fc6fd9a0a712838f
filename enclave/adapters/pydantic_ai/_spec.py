"""``agent_spec``: an ``AgentSpec`` derived from a ``pydantic_ai.Agent``, and
``from_object``, the one ``replay-enclave capture module:attr`` builds."""

from __future__ import annotations

import inspect
import sys
import typing
import uuid
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import pydantic
from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel

from enclave.adapters._outcome import outcome_policies
from ledger import StepKind

from ...capture import AgentSpec, BoundarySpec, Context, policy
from ._codec import jsonable
from ._model import BoundaryModel, model_of, model_spec
from ._tools import ToolBoundaries, function_tools
from ._wire import WireModel, replay_guard

__all__ = ["agent_spec", "from_object"]

IN_PROCESS_MODELS = (FunctionModel, TestModel)
_ADAPTER = __name__.rpartition(".")[0]  # the package

Outcome = Callable[[Any], Any]


def _reader(pick: str | Outcome | None) -> Outcome | None:
    if pick is None or callable(pick):
        return pick
    return lambda output: getattr(output, pick)


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
    tools = function_tools(agent, rule)
    declared = tuple(tool.spec for tool in tools.values())
    if any(boundary.name in tools for boundary in boundaries):
        raise ValueError("a declared boundary's name is taken by a tool")
    hosted_spec = None
    if wire_model is not None:
        if model is not None:
            raise ValueError("a model captured at the wire is not also a hosted boundary")
        if not any(boundary.kind is StepKind.MODEL for boundary in boundaries):
            raise ValueError(
                "a model captured at the wire crosses a model boundary declared in "
                "boundaries (enclave.adapters.http.http_boundary)"
            )
        wire_boundaries = tuple(b.name for b in boundaries if b.kind is StepKind.MODEL)
    elif model is not None:
        if model in tools:
            raise ValueError("the model boundary's name is taken by a tool")
        hosted_spec = model_spec(model, agent, tools, rule)
        declared += (hosted_spec,)
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
        capability = ToolBoundaries(ctx, tools)
        if wire_model is not None:
            made = WireModel(wire_model(ctx), ctx=ctx, boundaries=wire_boundaries)
            hosted: Any = agent.override(model=made)
        elif hosted_spec is not None:
            hosted = agent.override(model=BoundaryModel(model_of(agent), ctx, hosted_spec))
        else:
            hosted = nullcontext()
        guard = replay_guard() if ctx.serves_record else nullcontext()
        with guard, hosted:
            result = await agent.run(
                inputs["input"],
                deps=dependencies(ctx, inputs) if dependencies is not None else None,
                capabilities=[capability],
            )
        output = result.output
        outcome = {
            "decision": decide(output),
            "proposal": jsonable(output),
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
        outcome=outcome_policies(rule, scored=score is not None),
        score_bounds=(0.0, 1.0) if score is not None else None,
        boundaries=declared,
        credentials=credentials,
        code_modules=code_modules,
        # imported once by the replay worker's template, not in every run (the adapter
        # too: a project package, whose import settles the framework's lazy state)
        frameworks=("pydantic_ai", _ADAPTER, *frameworks),
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
