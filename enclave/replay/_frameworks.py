"""The frameworks an agent is built on, imported once by the replay worker's template.

An agent written on an agent framework imports hundreds of milliseconds of it. The
framework is not code under audit: it is an installed package, like the standard
library, and a worker that imported it in every fork-per-run child would spend most of
its CPU budget importing it again. ``AgentSpec.frameworks`` names such modules; the
template imports them before any run (``Sandbox.start(preload=...)``), so each run starts
from a state that holds them and pays only for the agent's own module.

The template is trusted: nothing the agent wrote may run in it. ``worker_preload``
therefore admits a name only when, found without importing it, it is

1. a project module (``enclave``, ``ledger``), or a module of the standard library or an
   installed package: its file lies in the interpreter's ``stdlib``, ``platstdlib``,
   ``purelib`` or ``platlib`` directory;
2. and none of the agent's own code: not a module of its code identity, not below the
   folder of any of them.

Anything else refuses the audit ``agent_unusable`` before a worker starts.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from pathlib import Path

from .._errors import Refused
from ..capture import AgentSpec

__all__ = ["worker_preload"]

_PROJECT = ("enclave", "ledger")


def _origin(module: str) -> Path | None:
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not found.has_location:
        return None
    return Path(found.origin).resolve()


def _installed_dirs() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple({Path(paths[key]).resolve() for key in keys})


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _admitted(module: str, agent_code: tuple[Path, ...]) -> bool:
    origin = _origin(module)
    if origin is None:
        return False
    if any(origin == own or own in origin.parents for own in agent_code):
        return False
    if module.split(".")[0] in _PROJECT:
        return _project_root() in origin.parents
    return any(root in origin.parents for root in _installed_dirs())


def _agent_code(agent: AgentSpec) -> tuple[Path, ...]:
    named = agent.name.partition(":")[0] if ":" in agent.name else None
    modules = {agent.function.__module__, *agent.code_modules, *([named] if named else [])}
    code: list[Path] = []
    for module in sorted(modules):
        origin = _origin(module)
        if origin is None:
            continue
        # a package's whole folder is its code; a module is its file
        code.append(origin.parent if origin.name == "__init__.py" else origin)
    return tuple(code)


def worker_preload(base: tuple[str, ...], agent: AgentSpec) -> tuple[str, ...]:
    """``base`` and the agent's frameworks, each checked (module docstring)."""
    code = _agent_code(agent)
    for module in agent.frameworks:
        if not _admitted(module, code):
            raise Refused(
                "a declared framework is not an installed package apart from the agent's code",
                code="agent_unusable",
            )
    return (*base, *(m for m in agent.frameworks if m not in base))
