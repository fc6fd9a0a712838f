"""Request keys and recorded values, the same in every run and every process.

``normalise`` takes out of a request what differs between two identical runs: message
ids the framework generated (``lc_run--<uuid7>-<i>``, ``lc_<uuid4>``, a bare uuid;
renumbered by first appearance, so which message is which stays in the key), run ids,
parent run ids, checkpoint ids and timestamps, task ids, token accounting
(``usage_metadata``) and the timing a provider reports in ``response_metadata``. A
provider's own ids (``call_...``, ``chatcmpl-...``) are its content: kept.

Tool outputs are recorded as JSON values where the framework made them JSON: a tool
that returns a dict has ``ToolNode`` write ``json.dumps(output, ensure_ascii=False)`` as
the message content (``msg_content_output``); that text is recorded parsed (``form``
``json``), so an intervention addresses its members by pointer, and rebuilt with the
same call. Any other content is recorded as it is (``form`` ``text`` or ``blocks``).
"""

from __future__ import annotations

import json
import re
import typing
import warnings
from typing import Any

from langchain_core.documents import Document
from langchain_core.load import dumpd, load
from langchain_core.messages import ToolMessage

__all__ = ["VOLATILE_KEYS", "decode_tool_message", "encode_tool_message", "normalise"]

# keys whose values differ between two identical runs, wherever they appear
VOLATILE_KEYS = frozenset(
    {
        "run_id",
        "parent_run_id",
        "checkpoint_id",
        "checkpoint_ns",
        "task_id",
        "ts",
        "created_at",
        "timestamp",
        # token accounting: per call, and marked ``total_cost: 0`` on an answer the
        # cache served; never what the model reads
        "usage_metadata",
    }
)
# provider-reported timing inside ``response_metadata``
TIMING_KEYS = frozenset(
    {
        "created",
        "total_duration",
        "load_duration",
        "prompt_eval_duration",
        "eval_duration",
        "latency",
        "time",
    }
)
# ids LangChain and LangGraph generate: ``lc_run--<uuid>-<i>`` (chat models),
# ``lc_<uuid>`` (messages) and a bare ``<uuid>`` (``add_messages`` for a message without one)
_GENERATED_ID = re.compile(
    r"^(lc_(run-+)?)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}(-\d+)?$"
)


def generated(value: Any) -> bool:
    """Whether ``value`` is an id LangChain generated for a message or a run."""
    return isinstance(value, str) and _GENERATED_ID.match(value) is not None


def normalise(value: Any) -> Any:
    """``value`` (JSON) without what differs between two identical runs; generated ids
    are numbered ``lc_#n`` by first appearance."""
    ids: dict[str, str] = {}

    def walk(node: Any, within: str | None) -> Any:
        if isinstance(node, list):
            return [walk(item, within) for item in node]
        if isinstance(node, str) and generated(node):
            return ids.setdefault(node, f"lc_#{len(ids)}")
        if not isinstance(node, dict):
            return node
        out = {}
        for key, item in node.items():
            if key in VOLATILE_KEYS:
                continue
            if within == "response_metadata" and key in TIMING_KEYS:
                continue
            out[key] = walk(item, key if key == "response_metadata" else within)
        return out

    return walk(value, None)


def encode_tool_message(message: ToolMessage) -> dict[str, Any]:
    """A tool's answer as the boundary records it: ``output`` (its content, parsed when
    the framework wrote it as JSON), ``form``, ``status`` and ``artifact``."""
    content = message.content
    form, output = "text", typing.cast(Any, content)
    if isinstance(content, list):
        form = "blocks"
    elif isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list) and _dumps(parsed) == content:
            form, output = "json", parsed
    return {
        "output": output,
        "form": form,
        "status": message.status,
        "artifact": _plain(message.artifact),
    }


def decode_tool_message(recorded: Any, *, name: str, tool_call_id: str) -> ToolMessage:
    """The ``ToolMessage`` of a recorded (or intervened) answer, for the call now being
    answered (its id is the call's, never the record's)."""
    output = recorded["output"]
    content = _dumps(output) if recorded["form"] == "json" else output
    return ToolMessage(
        content=content,
        name=name,
        tool_call_id=tool_call_id,
        status=recorded["status"],
        artifact=_artifact(recorded["artifact"]),
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # as ``msg_content_output`` writes it


def _plain(value: Any) -> Any:
    """An artifact as JSON: ``{"documents": [...]}`` for a retriever tool's documents
    (LangChain's codec, ``dumpd``), else ``{"value": ...}``; one that is not JSON is
    refused (it could not be replayed)."""
    if value is None:
        return None
    if isinstance(value, list) and value and all(isinstance(d, Document) for d in value):
        return {"documents": json.loads(json.dumps([dumpd(d) for d in value]))}
    try:
        return {"value": json.loads(json.dumps(value))}
    except (TypeError, ValueError) as exc:
        raise ValueError("a tool artifact that is not JSON cannot be recorded") from exc


def _artifact(recorded: Any) -> Any:
    if recorded is None:
        return None
    if "documents" in recorded:
        with warnings.catch_warnings():
            # ``load`` is marked beta; the warning is about its future, not this input
            warnings.filterwarnings("ignore", message="The function `load` is in beta")
            documents = [load(d, allowed_objects=[Document]) for d in recorded["documents"]]
        return documents
    return recorded["value"]
