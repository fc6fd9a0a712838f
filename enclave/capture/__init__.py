"""The capture SDK: agents declare their boundaries, ``ctx`` records every crossing."""

from ._context import Context, LiveCall
from ._registry import ENTRY_POINT_GROUP, available_agents, load_agent
from ._recorder import Recorder, SpecError
from ._seal import AgentCrashed, CaptureResult, build_manifest, capture, source_ref
from ._spec import AgentSpec, Answer, BoundarySpec, FieldPolicy, RevisionPoint, Substitute, policy

__all__ = [
    "ENTRY_POINT_GROUP",
    "AgentCrashed",
    "AgentSpec",
    "Answer",
    "BoundarySpec",
    "CaptureResult",
    "Context",
    "FieldPolicy",
    "LiveCall",
    "Recorder",
    "RevisionPoint",
    "SpecError",
    "Substitute",
    "available_agents",
    "build_manifest",
    "capture",
    "load_agent",
    "policy",
]
