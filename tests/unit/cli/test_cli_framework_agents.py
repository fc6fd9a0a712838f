"""``replay-enclave capture module:attr`` with a framework's agent object, unchanged: the
adapter registered for its framework builds the spec from the options in the input file,
the specimen records them in the agent's reference, and every later step (eligibility,
the sandboxed audit, verify) builds the same spec. Bad options get one line and write
nothing.

Commands run as real subprocesses through the installed console script, with the
project's examples importable, as a user runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.canary import find_canaries, scan_tree

EXE = shutil.which("replay-enclave")
pytestmark = pytest.mark.skipif(EXE is None, reason="the console script is not installed")
ROOT = Path(__file__).resolve().parents[3]
LEAK = "CANARY-FRAMEWORK-CLI-30b7"
PYDANTIC = "pydantic_ai_agent:support_agent"
AGENTS_SDK = "openai_agents_agent:scripted_desk"
LANGGRAPH = "langgraph_agent:support_agent"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["COLUMNS"] = "200"
    env["PYTHONPATH"] = str(ROOT / "examples")
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=300, check=False, env=env
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    assert run("init", "--home", str(root)).returncode == 0
    return root


def written(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return path


def captured(home: Path, tmp_path: Path, agent: str, data: dict[str, Any]) -> dict[str, Any]:
    out = run("capture", agent, "--input", str(written(tmp_path, data)), "--home", str(home))
    assert out.returncode == 0, out.stderr
    out = run("specimens", "list", "--home", str(home), "--json")
    (specimen,) = json.loads(out.stdout)
    return dict(specimen)


def audited(
    home: Path, specimen: str, call: str, field: str, value: Any, samples: int = 20
) -> dict[str, Any]:
    out = run(
        "audit", specimen, "--call", call, "--field", field, "--strategy", "replace",
        "--value", json.dumps(value), "--samples", str(samples), "--purpose", "framework agent",
        "--home", str(home), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def ticket(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tenant": "acme",
        "seed": 3,
        "decision": "decision",
        "score": "urgency",
        "version": "1.0.0",
        "inputs": {
            "input": f"It arrived broken, I want a refund. {LEAK}",
            "deps": {"tier": "premium"},
        },
    }
    data.update(changes)
    return data


def test_a_pydantic_ai_agent_object_is_captured_audited_and_verified(
    home: Path, tmp_path: Path
) -> None:
    specimen = captured(home, tmp_path, PYDANTIC, ticket())
    # the options the spec was built with travel in the agent's reference
    assert specimen["agent_name"] == (f"{PYDANTIC}?decision=decision&score=urgency&version=1.0.0")
    assert specimen["agent_version"] == "1.0.0"
    sid = specimen["specimen_id"]
    flipped = audited(home, sid, "main/sentiment#0", "/output/label", "neutral")
    assert flipped["failure"] is None, flipped["failure_detail"]
    assert flipped["classification"] == "influential"
    unread = audited(home, sid, "main/sentiment#0", "/output/confidence", 0.5, samples=100)
    assert unread["classification"] == "equivalent"
    out = run("verify", flipped["certificate_path"], "--home", str(home))
    assert out.returncode == 0, out.stderr
    # the prompt's canary is sealed: in no output, and in the home only as ciphertext
    assert LEAK not in json.dumps(flipped) + json.dumps(unread) + out.stdout
    assert scan_tree(home, [LEAK]) == {}


def test_an_agents_sdk_agent_carrying_its_model_is_captured_and_audited(
    home: Path, tmp_path: Path
) -> None:
    data = {"tenant": "acme", "seed": 1, "decision": "decision", "inputs": {"input": "A-1042"}}
    specimen = captured(home, tmp_path, AGENTS_SDK, data)
    assert specimen["agent_name"] == f"{AGENTS_SDK}?decision=decision"
    # the tool says "not delivered" (REFUND); had it said delivered, the desk would deny
    flipped = audited(
        home, specimen["specimen_id"], "main/order_status#0", "/output/delivered", True
    )
    assert flipped["failure"] is None, flipped["failure_detail"]
    assert flipped["classification"] == "influential"


def test_a_langgraph_agent_object_is_captured_and_audited(home: Path, tmp_path: Path) -> None:
    data = {
        "tenant": "acme",
        "seed": 2,
        "decision": "decision",
        "score": "urgency",
        "inputs": {"input": f"The blender arrived broken. {LEAK}"},
    }
    specimen = captured(home, tmp_path, LANGGRAPH, data)
    assert specimen["agent_name"] == f"{LANGGRAPH}?decision=decision&score=urgency"
    flipped = audited(home, specimen["specimen_id"], "main/sentiment#0", "/output/label", "neutral")
    assert flipped["failure"] is None, flipped["failure_detail"]
    assert flipped["classification"] == "influential"
    assert LEAK not in json.dumps(flipped)
    assert scan_tree(home, [LEAK]) == {}


@pytest.mark.parametrize(
    ("agent", "changes", "message"),
    [
        (PYDANTIC, {"decision": None}, "a framework's agent needs its outcome's decision"),
        (PYDANTIC, {"decision": f"x {LEAK}"}, "'decision' must be a short name"),
        (PYDANTIC, {"model": 3}, "'model' must be a short name"),
        (PYDANTIC, {"decision": "no_such_member"}, None),
        ("enclave.incidents.claims:AGENT", {}, "options apply to a framework's agent object"),
        ("os:getcwd", {}, "neither an AgentSpec nor a framework's agent"),
        ("claims", {}, "the agent must be named module:attribute"),
        (PYDANTIC, {"inputs": {"input": "hi", "deps": {"tier": LEAK}}}, "the agent crashed"),
    ],
    ids=[
        "no-decision",
        "decision-text",
        "model-number",
        "no-such-member",
        "agentspec-options",
        "not-an-agent",
        "entry-point-options",
        "deps-mismatch",
    ],
)
def test_bad_options_get_one_line_and_write_nothing(
    home: Path, tmp_path: Path, agent: str, changes: dict[str, Any], message: str | None
) -> None:
    data = {k: v for k, v in ticket(**changes).items() if v is not None}
    out = run("capture", agent, "--input", str(written(tmp_path, data)), "--home", str(home))
    assert out.returncode != 0
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: "), out.stderr
    assert "Traceback" not in out.stderr
    assert find_canaries(out.stderr.encode(), [LEAK]) == []
    if message is not None:
        assert message in out.stderr
    assert run("specimens", "list", "--home", str(home), "--json").stdout.strip() == "[]"
    assert scan_tree(home, [LEAK]) == {}
