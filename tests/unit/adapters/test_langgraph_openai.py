"""A LangGraph agent on a hosted ``ChatOpenAI``, audited in the sandbox: captured against
a real local OpenAI-compatible server, its model's answer intervened on in isolated
workers with the server gone. Built as the provider's docs build it, the model opens a
TCP socket to probe keepalive options in every fresh run: the worker's tripwire ends the
audit ``network``, with no certificate — fail closed, never a live answer.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import AgentSpec, capture
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.sandbox import SandboxLimits
from tests.agents import langgraph_openai_agents as lo
from tests.agents import langgraph_openai_probing
from tests.support.canary import scan_tree

ROOT = Path(__file__).resolve().parents[3]
LIMITS = SandboxLimits(wall_seconds=120.0)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("langgraph-openai") / "home"))
    yield rt
    rt.close()


def captured(runtime: Runtime, agent: AgentSpec) -> str:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "local_model_server.py"), "--port", str(lo.PORT)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and "serving" in server.stdout.readline()
        inputs = {"input": "applicant risk 0.7"}
        return capture(runtime, agent, inputs, tenant_id="acme", seed=3).specimen_id
    finally:
        server.terminate()
        server.wait(timeout=20)
        if server.stdout is not None:
            server.stdout.close()


def audit(runtime: Runtime, specimen: str, samples: int) -> Any:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE,
            call_id="main/screener#0",
            field="/message/kwargs/content",
            value="APPROVE",
        ),
        requester="test",
        samples=samples,
        seed=1,
        purpose="hosted chat model",
    )
    return run_audit(runtime, request, now=datetime.now(UTC) + timedelta(minutes=5), limits=LIMITS)


def test_the_hosted_model_s_answer_is_audited_in_the_sandbox_with_its_server_gone(
    runtime: Runtime,
) -> None:
    outcome = audit(runtime, captured(runtime, lo.SCREENER), samples=20)
    assert outcome.failure is None, outcome.failure
    assert outcome.classification == "influential"  # REJECT became APPROVE
    assert outcome.envelope is not None
    assert scan_tree(runtime.home.root, ["local-placeholder"]) == {}


def test_a_model_that_opens_a_tcp_socket_in_the_run_ends_the_audit_network(
    runtime: Runtime,
) -> None:
    outcome = audit(runtime, captured(runtime, langgraph_openai_probing.PROBING), samples=5)
    assert outcome.classification == "failed" and outcome.failure == "network"
    assert outcome.envelope is None
