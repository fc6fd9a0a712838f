"""Finding agents: the ``replay_enclave.agents`` entry-point group, or ``module:attr``.

An outside runtime registers its own agent either way (see docs/agents.md,
"Registering an agent"). The attribute must be an ``AgentSpec``.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from .._errors import BadInput
from ._spec import AgentSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "available_agents",
    "load_agent",
    "recorded_reference",
    "reference_of",
]

ENTRY_POINT_GROUP = "replay_enclave.agents"
_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def available_agents() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_agent(name: str) -> AgentSpec:
    target = available_agents().get(name)
    if target is None:
        if not _REF.fullmatch(name):
            raise BadInput("unknown agent (see `replay-enclave agents`)")
        target = name
    return import_agent(target)


def import_agent(target: str) -> AgentSpec:
    """The ``AgentSpec`` at ``module:attribute`` (no entry-point lookup)."""
    module_name, _, attr = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        raise BadInput("unknown agent (see `replay-enclave agents`)") from None
    if not isinstance(found, AgentSpec):
        raise BadInput("the named object is not an AgentSpec")
    return found


def reference_of(agent: AgentSpec) -> str | None:
    """``module:attribute`` under which ``agent`` is importable, if it is."""
    module_name = agent.function.__module__
    module = sys.modules.get(module_name)
    if module is None:
        return None
    for attr, value in vars(module).items():
        if value is agent and not attr.startswith("_"):
            return f"{module_name}:{attr}"
    return None


def recorded_reference(agent: Mapping[str, Any]) -> str:
    """How to load the agent a manifest names: the import reference recorded at capture
    (``module:attr``, the same target an entry point names), else its registered name."""
    ref = agent.get("ref")
    return ref if isinstance(ref, str) else str(agent.get("name", ""))
