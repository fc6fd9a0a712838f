"""Fresh state per run, tried as an attacker would: a writer run leaves a mark in what
the worker's template keeps, and a later reader run of the same worker must see exactly
what the same reader sees in a fresh worker (DESIGN invariant: every run starts from the
template's state). What a run can still tell from counters the kernel shares (pids,
inode numbers) is documented with its capacity in docs/sandbox.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from enclave.sandbox import Sandbox, SandboxLimits

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
AGENTS = "tests.agents.carryover_agents"


def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(
        scratch_root=tmp_path / "scratch", isolation="bwrap", limits=SandboxLimits(wall_seconds=10)
    )


def runs(tmp_path: Path, *handlers: str) -> list[dict[str, Any]]:
    """One worker whose runs call ``handlers`` in turn (each a run of its own)."""
    replies = []
    with sandbox(tmp_path).start(f"{AGENTS}:dispatch") as worker:
        for handler in handlers:
            replies.append(worker.call({"handler": handler}))
    return replies


def test_a_run_cannot_leave_a_mark_in_the_scratch_directory_s_own_timestamps(
    tmp_path: Path,
) -> None:
    (fresh,) = runs(tmp_path / "a", "read_scratch_times")
    _, after_writer = runs(tmp_path / "b", "mark_scratch_times", "read_scratch_times")
    assert after_writer["mtime_ns"] != 1_234_567_891_011_121_314
    assert after_writer == fresh


def test_what_a_run_imports_does_not_decide_how_later_runs_load_it(tmp_path: Path) -> None:
    (fresh,) = runs(tmp_path / "a", "read_probe_loader")
    _, after_writer = runs(tmp_path / "b", "import_probe", "read_probe_loader")
    assert after_writer == fresh


def test_the_template_s_environment_and_command_line_hold_nothing_a_run_does_not_see(
    tmp_path: Path,
) -> None:
    (seen,) = runs(tmp_path, "read_template_process")
    environ = seen["template_environ"]
    assert environ.split("\0")[:-1] == [f"{k}={v}" for k, v in seen["environ"].items()]
    arguments = seen["template_cmdline"].split("\0")[:-1]
    config, path = json.loads(arguments[-2]), json.loads(arguments[-1])
    # the worker's configuration: its limits (getrlimit shows them), scratch, handler,
    # the layers it loads; and the import path every run has
    assert set(config) <= {"fd", "scratch", "limits", "handler", "preload", "seccomp", "zygote"}
    assert all(entry in seen["path"] for entry in path)
