"""A graph built per run: ``agent_spec(build)``, where ``build(ctx)`` compiles the graph
for one run from the run's own ``ctx``.

A compiled graph holds its chat model inside its nodes (``create_agent``'s model node
closes over the model, a hand-written node over its own), and nothing in the framework
replaces it after compilation. A model whose client must be the run's own — the wire
adapter's (``enclave.adapters.http.async_client(ctx, BOUNDARY)``), so that each
exchange with the endpoint is recorded as it was sent and answered, the form governed
inference can ask again — therefore needs the graph built for each run, as a LangGraph
deployment builds a graph per run from a factory given the run's configuration.

Invariants:

1. ``build`` is called once when the spec is declared, with a context that answers
   nothing (``declared_graph``: each crossing is a ``ValueError``). That graph gives the
   spec its tool boundaries and says whether the graph has a checkpointer; building a
   graph crosses no boundary.
2. Each run calls ``build`` with the run's own ``ctx`` — a capture's recorder, a replay's
   context — before its graph runs (``run_graph``).
3. A run's graph has the declared graph's tools, by name and arguments' schema
   (``same_tools``); otherwise the run fails with ``ValueError`` before anything crosses.
4. The model is captured in one place: a graph built per run takes no hosted alias
   (``agent_spec(model=...)``); its model is agent code or on the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from random import Random
from typing import Any, NoReturn

from langgraph.pregel import Pregel

from ...capture import BoundarySpec, Context

__all__ = ["Build", "declared_graph", "run_graph", "same_tools"]

Graph = Pregel[Any, Any, Any, Any]
Build = Callable[[Context], Graph]


def _refused() -> NoReturn:
    raise ValueError(
        "building the graph crosses no boundary (it is built once more, answered by "
        "nothing, when the spec is declared): cross in its nodes and tools"
    )


class _Declaring(Context):
    """The context a graph is built with when its spec is declared: it answers nothing."""

    def call(self, spec: BoundarySpec, request: Mapping[str, Any], **_: Any) -> Any:
        _refused()

    async def acall(self, spec: BoundarySpec, request: Mapping[str, Any], **_: Any) -> Any:
        _refused()

    def ambient(self, spec: BoundarySpec, request: Mapping[str, Any], live: Any) -> Any:
        _refused()

    def cut(self, name: str, compute: Any) -> Any:
        _refused()

    def now(self) -> datetime:
        _refused()

    def random(self, stream: str | None = None) -> Random:
        _refused()


def run_graph(build: Build, ctx: Context) -> Graph:
    """The graph ``build`` compiles for the run of ``ctx``."""
    graph = build(ctx)
    if not isinstance(graph, Pregel):
        raise TypeError("a graph's builder returns a compiled graph (create_agent, compile)")
    return graph


def declared_graph(build: Build) -> Graph:
    """The graph the spec is derived from: built with a context that answers nothing."""
    return run_graph(build, _Declaring())


def same_tools(declared: Mapping[str, BoundarySpec], built: Mapping[str, BoundarySpec]) -> None:
    """Raise ``ValueError`` unless a run's graph has the declared tools, alike."""
    if dict(declared) != dict(built):
        raise ValueError("the run's graph has other tools than the graph its spec declares")
