"""What the replay worker's template may import for an agent: its frameworks, never its
own code (``enclave/replay/_frameworks.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from enclave import Refused
from enclave.capture import AgentSpec
from enclave.replay.stages import worker_preload
from tests.agents import concurrent_agents, http_agents

BASE = ("enclave.replay.worker._entry",)


def _declaring(*frameworks: str, code_modules: tuple[str, ...] = ()) -> AgentSpec:
    return dataclasses.replace(
        concurrent_agents.BATCH_AGENT, frameworks=frameworks, code_modules=code_modules
    )


def test_installed_packages_the_standard_library_and_project_modules_are_preloaded() -> None:
    agent = _declaring("httpx", "json", "enclave.adapters.http")
    assert worker_preload(BASE, agent) == (*BASE, "httpx", "json", "enclave.adapters.http")


@pytest.mark.parametrize(
    "framework",
    [
        "tests.agents.concurrent_agents",  # the agent's own module
        "tests.agents.replay_agents",  # a declared code module
        "tests.agents",  # the folder holding them
        "no.such.module",
        "tests.agents.http_agents",  # importable, but not installed: code beside the agent
    ],
)
def test_the_agents_own_or_uninstalled_code_never_runs_in_the_template(framework: str) -> None:
    agent = _declaring(framework, code_modules=("tests.agents.replay_agents",))
    with pytest.raises(Refused) as info:
        worker_preload(BASE, agent)
    assert info.value.code == "agent_unusable"


def test_frameworks_are_declared_as_a_tuple_of_names() -> None:
    with pytest.raises(ValueError, match="frameworks"):
        _declaring("")
    assert http_agents.HTTP_AGENT.frameworks == ("openai", "enclave.adapters.http")
