"""Deferred imports for package fronts (PEP 562).

A replay worker imports the SDK and the engine, not the database layer, the JSON
Schema validator or the certificate signer; importing those costs seconds of start-up
per job. A package front lists such names with the private module that defines them,
and they are imported on first access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deferred"]


def deferred(
    package: str, namespace: dict[str, Any], names: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` importing ``names[name]`` (a relative module) on demand."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later lookups skip this hook
        return value

    return __getattr__
