"""The sandbox wall in the tree: what runs inside the worker lives in
``enclave/sandbox/inside/`` and ``enclave/replay/worker/``, and loads nothing of the
supervisor's side (launch, checks, handles, the runtime, keys, the database, the signer).

Two checks: the worker's import closure in a fresh interpreter, and the imports written
in the inside folders (read from the source, so a deferred import counts too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from enclave.replay.stages import WORKER_HANDLER, WORKER_PRELOAD
from enclave.sandbox.launch import BOOT
from tests.project.test_layers import MODULES, ROOT, imports_of

INSIDE = ("enclave.sandbox.inside", "enclave.replay.worker")

# Loaded on both sides of the wall; each is a leaf of data or pure functions that
# imports nothing of the supervisor's side (the static check below holds them to it).
SHARED = {
    "enclave._errors": "the error root the replay errors derive from",
    "enclave.sandbox._wire": "the wire: frames, the limits a worker starts with, exit codes",
    "enclave.replay._model": "trajectories and run results, sent in and sent back",
    "enclave.replay._errors": "a run's failure codes",
    "enclave.replay._compare": "layer comparison: a sample is reduced inside",
    "enclave.replay._quantize": "the grid layer comparison rounds on",
    "enclave.replay._decisions": "the closed vocabulary a sample's decision labels use",
    "enclave.replay._results": "SampleSummary, the metadata a sample is reduced to",
    # the SDK: agent code imports it, and the engine drives the agent through it
    "enclave.capture": "the SDK's front",
    "enclave.capture._context": "the context an agent calls its boundaries through",
    "enclave.capture._spec": "agent and boundary specs",
    "enclave.capture._registry": "importing an agent by name",
    "enclave.capture._payload_codec": "payload values as recorded",
    "enclave.capture._code_identity": "code digests: a worker hashes the candidate it is shown",
    # ambient inputs: in the replay child the agent's own reads outside ctx go to the engine
    "enclave.capture._ambient": "which run observes the agent's reads outside ctx",
    "enclave.capture._ambient_env": "environment variables, served from the record",
    "enclave.capture._ambient_file": "data files, served from the record",
    "enclave.capture._ambient_draws": "the clock, global random and ids, served from the run",
}

_LIST = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps({m: getattr(sys.modules[m], "__file__", None) for m in sys.modules
                  if m == "enclave" or m.startswith("enclave.")}))
"""


def _inside(module: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in INSIDE)


def _package(module: str) -> bool:
    return module in MODULES and MODULES[module].name == "__init__.py"


def _entry_modules() -> list[str]:
    """What a worker imports before any agent code: the boot command's module, the
    replay handler's and the trusted preload list."""
    boot = BOOT.split("from ", 1)[1].split(" import", 1)[0]
    return [boot, WORKER_HANDLER.partition(":")[0], *WORKER_PRELOAD]


def test_the_worker_loads_nothing_of_the_supervisor() -> None:
    entries = _entry_modules()
    assert all(_inside(name) for name in entries), entries
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-s", "-B", "-c", _LIST, *entries],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    loaded: dict[str, str | None] = json.loads(done.stdout)
    assert set(entries) <= set(loaded)
    assert all(f is None or f.startswith(str(ROOT)) for f in loaded.values())  # this tree
    outside = sorted(m for m in loaded if not (_inside(m) or m in SHARED or _package(m)))
    assert outside == []


def test_inside_modules_import_nothing_of_the_supervisor() -> None:
    inside = [m for m in MODULES if _inside(m)]
    assert len(inside) > 10
    crossing = [
        f"{module} -> {target}"
        for module in inside
        for target in imports_of(module)
        if target.startswith("enclave") and not (_inside(target) or target in SHARED)
    ]
    assert crossing == []


def test_shared_modules_stay_leaves() -> None:
    crossing = [
        f"{module} -> {target}"
        for module in SHARED
        for target in imports_of(module)
        if target.startswith("enclave") and target not in SHARED
    ]
    assert crossing == []
