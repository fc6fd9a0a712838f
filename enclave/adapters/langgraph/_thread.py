"""A LangGraph thread's prior state: an input, read once, and a fresh saver at replay.

A graph compiled with a checkpointer continues a thread (``thread_id`` in the run's
``configurable``): the state it starts from was written by earlier runs, so it is an
input of this one. Before the graph runs, the thread's latest checkpoint is read from
the graph's saver (``BaseCheckpointSaver.aget_tuple``) through ``ctx.acall`` on one
CONTEXT boundary, ``thread-state``: request ``{"thread"}``, response ``{"state"}`` — the
checkpoint and its metadata in LangGraph's own serializer (``JsonPlusSerializer``,
``dumps_typed``; base64), or ``None`` for a new thread.

* Capture: the run uses the graph's own saver; its writes (new checkpoints) are the
  run's effects on the world, made at capture only.
* Replay: the run uses a fresh ``InMemorySaver`` seeded (``aput``) with the recorded
  checkpoint; the capture-time saver is never read nor written, so nothing left in it
  (later runs, ``@task`` results, pending writes) can answer behind the record.

Pending writes of an interrupted superstep are not carried (a thread resumed from an
interrupt is not covered).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ledger import StepKind

from ...capture import BoundarySpec, Context, FieldPolicy

__all__ = ["THREAD_STATE", "read_thread", "seeded_saver", "thread_spec"]

THREAD_STATE = "thread-state"
_SERDE = JsonPlusSerializer()


def thread_spec(rule: FieldPolicy) -> BoundarySpec:
    return BoundarySpec(
        kind=StepKind.CONTEXT,
        name=THREAD_STATE,
        request={"thread": rule},
        response={"state": rule},
        schema_id="langgraph-checkpoint",
    )


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def read_thread(
    ctx: Context, spec: BoundarySpec, saver: BaseCheckpointSaver[Any], thread: str
) -> Mapping[str, Any] | None:
    """The thread's latest checkpoint as recorded (``None``: a new thread)."""

    async def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
        found = await saver.aget_tuple(_config(thread))
        if found is None:
            return {"state": None}
        kind, blob = _SERDE.dumps_typed(
            {"checkpoint": found.checkpoint, "metadata": found.metadata}
        )
        return {"state": {"type": kind, "data": base64.b64encode(blob).decode("ascii")}}

    answer = await ctx.acall(spec, {"thread": thread}, live=live)
    state = answer["state"]
    return None if state is None else dict(state)


async def seeded_saver(state: Mapping[str, Any] | None, thread: str) -> InMemorySaver:
    """A fresh saver holding only the recorded checkpoint of ``thread``."""
    saver = InMemorySaver()
    if state is not None:
        loaded = _SERDE.loads_typed((str(state["type"]), base64.b64decode(state["data"])))
        checkpoint = loaded["checkpoint"]
        await saver.aput(
            _config(thread), checkpoint, loaded["metadata"], checkpoint["channel_versions"]
        )
    return saver
