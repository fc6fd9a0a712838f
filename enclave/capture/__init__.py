"""The capture SDK: agents declare their boundaries, ``ctx`` records every crossing."""

import sys
import types
from typing import TYPE_CHECKING, Any

from ledger.lazy import deferred

from ._context import Context, LiveCall
from ._registry import ENTRY_POINT_GROUP, available_agents, load_agent, recorded_reference
from ._spec import AgentSpec, Answer, BoundarySpec, FieldPolicy, RevisionPoint, Substitute, policy

if TYPE_CHECKING:  # deferred below: a replay worker must start without them
    from ._recorder import Recorder, SpecError
    from ._seal import AgentCrashed, CaptureResult, build_manifest, capture, source_ref
__getattr__ = deferred(
    __name__,
    globals(),
    {
        "Recorder": "._recorder",
        "SpecError": "._recorder",
        "AgentCrashed": "._seal",
        "CaptureResult": "._seal",
        "build_manifest": "._seal",
        "capture": "._seal",
        "source_ref": "._seal",
    },
)

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
    "recorded_reference",
    "policy",
    "source_ref",
]


class _CallableFront(types.ModuleType):
    """``enclave.capture`` is both this package and the function the Python API
    promises (``enclave.capture(runtime, agent, inputs, ...)``): importing a submodule
    binds the package to that name on ``enclave``, so calling it calls the function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableFront
