"""The worker's template warms its frameworks up once: every run forks from a template
that already holds what the framework builds lazily on first use
(``enclave/sandbox/inside/_worker.py``, ``_warm_up``; ``enclave/adapters/_warm_ups.py``).

Each case preloads what an agent on that framework declares and asks, from a run, which
of the modules its framework imports only on first use the run started with: without
the warm-up every run imports them again itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from enclave.replay.stages import WORKER_PRELOAD
from enclave.sandbox import Sandbox, SandboxLimits

HANDLER = "tests.agents.warm_up_agents:present"
LANGGRAPH = (
    "langchain_core",
    "langgraph.graph",
    "langgraph.prebuilt",
    "langchain.agents",
    "enclave.adapters.langgraph",
)
CASES = {
    # the openai client imports its resources on first access, anyio its backend on first
    # use, the Agents SDK its run loop on the first run, LangChain its tracers likewise
    "openai client": (("openai", "enclave.adapters.http"), "openai.resources.chat.completions"),
    "pydantic-ai": (("pydantic_ai", "enclave.adapters.pydantic_ai"), "anyio._backends._asyncio"),
    "Agents SDK": (("agents", "enclave.adapters.openai_agents"), "agents.testing"),
    "MCP": (("mcp", "enclave.adapters.mcp"), "anyio._backends._asyncio"),
    "LangGraph": (LANGGRAPH, "langchain_core.tracers.context"),
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    return Sandbox(
        scratch_root=tmp_path / "scratch",
        isolation="bwrap",
        limits=SandboxLimits(wall_seconds=60.0),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_run_starts_with_the_frameworks_first_use_done(sandbox: Sandbox, case: str) -> None:
    frameworks, lazy = CASES[case]
    with sandbox.start(HANDLER, preload=(*WORKER_PRELOAD, *frameworks)) as worker:
        replies = [worker.call({"modules": [lazy]}) for _ in range(2)]
    assert replies == [{"present": [lazy]}] * 2  # the same start for the second run too


def test_a_run_still_imports_what_no_warm_up_touched(sandbox: Sandbox) -> None:
    # the check can fail: a module no template imported is absent from a run
    with sandbox.start(HANDLER, preload=WORKER_PRELOAD) as worker:
        assert worker.call({"modules": ["openai.resources.chat.completions"]}) == {"present": []}
