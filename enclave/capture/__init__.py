"""The capture SDK: agents declare their boundaries, ``ctx`` records every crossing."""

import sys
import types
from typing import TYPE_CHECKING, Any

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._ambient import CREDENTIAL_PLACEHOLDER as CREDENTIAL_PLACEHOLDER
    from ._ambient import observing as observing
    from ._ambient import suspended as suspended
    from ._code_identity import CodeIdentity as CodeIdentity
    from ._code_identity import check_code as check_code
    from ._code_identity import code_identity as code_identity
    from ._code_identity import is_code_digest as is_code_digest
    from ._code_identity import source_root_files as source_root_files
    from ._code_identity import source_root_identity as source_root_identity
    from ._context import AsyncLiveCall as AsyncLiveCall
    from ._context import Compute as Compute
    from ._context import Context as Context
    from ._context import LiveCall as LiveCall
    from ._payload_codec import PAYLOAD_V1 as PAYLOAD_V1
    from ._payload_codec import decode_payload as decode_payload
    from ._payload_codec import encode_payload as encode_payload
    from ._recorder import Recorder as Recorder
    from ._recorder import SpecError as SpecError
    from ._registry import ADAPTER_GROUP as ADAPTER_GROUP
    from ._registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from ._registry import FRAMEWORK_OPTIONS as FRAMEWORK_OPTIONS
    from ._registry import available_agents as available_agents
    from ._registry import framework_reference as framework_reference
    from ._registry import import_agent as import_agent
    from ._registry import load_agent as load_agent
    from ._registry import recorded_reference as recorded_reference
    from ._seal import AgentCrashed as AgentCrashed
    from ._seal import CaptureResult as CaptureResult
    from ._seal import build_manifest as build_manifest
    from ._seal import capture as capture
    from ._seal import source_ref as source_ref
    from ._spec import AgentSpec as AgentSpec
    from ._spec import Answer as Answer
    from ._spec import BoundarySpec as BoundarySpec
    from ._spec import FieldPolicy as FieldPolicy
    from ._spec import RevisionPoint as RevisionPoint
    from ._spec import Substitute as Substitute
    from ._spec import policy as policy

_FRONT = {
    "observing": "._ambient",
    "suspended": "._ambient",
    "CREDENTIAL_PLACEHOLDER": "._ambient",
    "CodeIdentity": "._code_identity",
    "check_code": "._code_identity",
    "code_identity": "._code_identity",
    "is_code_digest": "._code_identity",
    "source_root_files": "._code_identity",
    "source_root_identity": "._code_identity",
    "Compute": "._context",
    "Context": "._context",
    "AsyncLiveCall": "._context",
    "LiveCall": "._context",
    "PAYLOAD_V1": "._payload_codec",
    "decode_payload": "._payload_codec",
    "encode_payload": "._payload_codec",
    "Recorder": "._recorder",
    "SpecError": "._recorder",
    "ADAPTER_GROUP": "._registry",
    "ENTRY_POINT_GROUP": "._registry",
    "FRAMEWORK_OPTIONS": "._registry",
    "framework_reference": "._registry",
    "available_agents": "._registry",
    "import_agent": "._registry",
    "load_agent": "._registry",
    "recorded_reference": "._registry",
    "AgentCrashed": "._seal",
    "CaptureResult": "._seal",
    "build_manifest": "._seal",
    "capture": "._seal",
    "source_ref": "._seal",
    "AgentSpec": "._spec",
    "Answer": "._spec",
    "BoundarySpec": "._spec",
    "FieldPolicy": "._spec",
    "RevisionPoint": "._spec",
    "Substitute": "._spec",
    "policy": "._spec",
}
# the replay worker and agent code import this front: each name loads its module on
# first use, so a worker loads the SDK it runs and not the recorder, the sealer or the
# key providers behind them
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)


class _CallableFront(types.ModuleType):
    """``enclave.capture`` is both this package and the function the Python API
    promises (``enclave.capture(runtime, agent, inputs, ...)``): importing a submodule
    binds the package to that name on ``enclave``, so calling it calls the function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.capture(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableFront
