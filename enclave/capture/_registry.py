"""Finding agents: the ``replay_enclave.agents`` entry-point group, or ``module:attr``.

An outside runtime registers its own agent either way (see docs/agents.md,
"Registering an agent"). The attribute is an ``AgentSpec``, or a framework's agent object
(an Agents SDK ``Agent``, a pydantic-ai ``Agent``, a LangGraph graph) that the adapter
registered for its framework (entry-point group ``replay_enclave.adapters``, named by the
framework's top-level package) turns into one. Such a reference carries the options the
spec is built with — ``module:attr?decision=FIELD&score=FIELD&model=ALIAS&version=V`` —
and is the agent's name, so every later load (eligibility, the replay worker) builds the
same spec.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import parse_qsl, urlencode

from .._errors import BadInput
from ._spec import AgentSpec

__all__ = [
    "ADAPTER_GROUP",
    "ENTRY_POINT_GROUP",
    "FRAMEWORK_OPTIONS",
    "available_agents",
    "framework_reference",
    "load_agent",
    "recorded_reference",
    "reference_of",
]

ENTRY_POINT_GROUP = "replay_enclave.agents"
ADAPTER_GROUP = "replay_enclave.adapters"
# what a framework agent's spec is built with: the outcome's decision (and score) member,
# the hosted model's boundary alias, the agent's declared version
FRAMEWORK_OPTIONS = ("decision", "score", "model", "version")
_TARGET = r"[A-Za-z_][\w.]*:[A-Za-z_]\w*"
_OPTION_VALUE = re.compile(r"[A-Za-z0-9_][\w.-]{0,63}")
_REF = re.compile(_TARGET + r"(\?[\w.=&-]{1,400})?")


def available_agents() -> dict[str, str]:
    return {ep.name: ep.value for ep in _group(ENTRY_POINT_GROUP)}


@functools.cache
def _group(group: str) -> tuple[Any, ...]:
    """An entry-point group, read once per process: the lookup reads every installed
    distribution's metadata (tens of milliseconds), and a capture resolves its agent's
    name more than once. A distribution installed later is seen by the next process."""
    return tuple(entry_points(group=group))


def load_agent(name: str) -> AgentSpec:
    target = available_agents().get(name)
    if target is None:
        if not _REF.fullmatch(name):
            raise BadInput("unknown agent (see `replay-enclave agents`)")
        target = name
    return import_agent(target)


def framework_reference(target: str, options: Mapping[str, Any]) -> str:
    """``target`` (``module:attr``) with the options a framework agent's spec is built
    with: the reference its specimen records and every later load reads."""
    if not re.fullmatch(_TARGET, target):
        raise BadInput("the agent must be named module:attribute")
    chosen = {}
    for key in FRAMEWORK_OPTIONS:
        value = options.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not _OPTION_VALUE.fullmatch(value):
            raise BadInput(f"'{key}' must be a short name (letters, digits, _ . -)")
        chosen[key] = value
    if "decision" not in chosen:
        raise BadInput("a framework's agent needs its outcome's decision member ('decision')")
    return f"{target}?{urlencode(chosen)}"


def import_agent(target: str) -> AgentSpec:
    """The ``AgentSpec`` at ``module:attribute`` (no entry-point lookup), or the one the
    framework's adapter builds from the agent object there with the reference's options."""
    reference, _, query = target.partition("?")
    module_name, _, attr = reference.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        raise BadInput("unknown agent (see `replay-enclave agents`)") from None
    if isinstance(found, AgentSpec):
        if query:
            raise BadInput("options apply to a framework's agent object, not an AgentSpec")
        return found
    return _adapted(found, target, module_name, _options(query))


def _options(query: str) -> dict[str, str]:
    if not query:
        return {}
    try:
        pairs = parse_qsl(query, strict_parsing=True)
    except ValueError:
        raise BadInput("the agent reference's options are malformed") from None
    options = dict(pairs)
    if len(options) != len(pairs) or set(options) - set(FRAMEWORK_OPTIONS):
        raise BadInput("the agent reference's options are malformed")
    if not all(_OPTION_VALUE.fullmatch(v) for v in options.values()):
        raise BadInput("the agent reference's options are malformed")
    return options


def _adapted(found: Any, name: str, module_name: str, options: Mapping[str, str]) -> AgentSpec:
    framework = type(found).__module__.partition(".")[0]
    hooks = {ep.name: ep for ep in _group(ADAPTER_GROUP)}
    if framework not in hooks:
        raise BadInput("the named object is neither an AgentSpec nor a framework's agent")
    if "decision" not in options:
        raise BadInput("a framework's agent needs its outcome's decision member ('decision')")
    try:
        build = hooks[framework].load()
    except ImportError:
        raise BadInput(f"the adapter for {framework} is not installed (docs/adapters/)") from None
    try:
        spec = build(
            found,
            name=name,
            version=options.get("version", "0"),
            decision=options["decision"],
            score=options.get("score"),
            model=options.get("model"),
            module=module_name,
        )
    except (TypeError, ValueError) as exc:  # the adapter's own one-line reasons
        raise BadInput(f"the agent cannot be adapted: {exc}") from None
    if not isinstance(spec, AgentSpec):
        raise BadInput("the framework's adapter did not build an AgentSpec")
    return spec


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
