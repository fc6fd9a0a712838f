"""Runs that try to pass state to later runs of the same worker through what the
worker's template keeps: each handler is one run; a *writer* leaves a mark, a *reader*
(a later run) reports what it sees. ``tests/boundary/test_run_carryover.py`` compares
each reader with the same reader in a fresh worker.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

# a module of the standard library that no project module imports: whether a run finds
# it compiled by the template says whether an earlier run imported it
PROBE_MODULE = "colorsys"
MARK_NS = 1_234_567_891_011_121_314


def mark_scratch_times(request: dict[str, Any]) -> dict[str, Any]:
    """The writer: the scratch directory's own timestamps set, no file left."""
    os.utime(".", ns=(MARK_NS, MARK_NS))
    return {"marked": True}


def read_scratch_times(request: dict[str, Any]) -> dict[str, Any]:
    found = os.stat(".")  # before anything lists the directory (that moves its atime)
    return {
        "atime_ns": found.st_atime_ns,
        "mtime_ns": found.st_mtime_ns,
        "mode": found.st_mode,
    }


def import_probe(request: dict[str, Any]) -> dict[str, Any]:
    """The writer: imports a module the template does not hold."""
    importlib.import_module(PROBE_MODULE)
    return {"imported": True}


def read_probe_loader(request: dict[str, Any]) -> dict[str, Any]:
    module = importlib.import_module(PROBE_MODULE)
    loader = type(module.__spec__.loader) if module.__spec__ else None
    return {"loader": f"{loader.__module__}.{loader.__qualname__}" if loader else None}


def read_template_process(request: dict[str, Any]) -> dict[str, Any]:
    """What a run reads of its worker's template (the worker's first process)."""
    seen: dict[str, Any] = {"environ": dict(os.environ), "path": list(sys.path)}
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{os.getppid()}/{name}", "rb") as fh:
                seen[f"template_{name}"] = fh.read().decode("utf-8", "replace")
        except OSError as error:
            seen[f"template_{name}"] = type(error).__name__
    return seen


def dispatch(request: dict[str, Any]) -> dict[str, Any]:
    """The worker's handler: runs the named probe (one run per call)."""
    handler = globals()[str(request["handler"])]
    reply: dict[str, Any] = handler(request)
    return reply
