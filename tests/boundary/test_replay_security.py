"""Security at the audit level (DESIGN invariants 1, 2 and 5).

Each agent in ``tests/agents/replay_agents.py`` is captured harmlessly and misbehaves only when
replayed. Every such audit must end ``failed`` with the sandbox's reason code, issue no
certificate, append ``audit.failed`` — and the attempted effect must not have happened
(the loopback listener accepted nothing, the target file does not exist).

Then a canary sweep over everything those audits, the five demo audits and the CLI
left behind: certificates, every file under the home, CLI output, log records and
exception texts.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import EnclaveError, Home, Runtime
from enclave.capture import AgentSpec
from enclave.cli import capture_incidents, demo_audits
from enclave.replay import AuditOutcome, AuditRequest, Intervention, Strategy, run_audit
from enclave.sandbox import SandboxLimits
from tests.agents import replay_agents as agents
from tests.support import cli_runner, loopback
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree

CANARIES = (*INCIDENT_CANARIES, agents.CANARY)
REPLACE_VALUE = Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2)
LIMITS = SandboxLimits(wall_seconds=20.0)

# agent, expected reason(s), what the effect would leave behind
HOSTILE: dict[str, tuple[AgentSpec, tuple[str, ...], str]] = {
    "socket": (agents.SOCKET_AGENT, ("network",), "connection"),
    "socket-swallowed": (agents.SWALLOWED_SOCKET_AGENT, ("network",), "connection"),
    "urllib": (agents.URLLIB_AGENT, ("network",), "connection"),
    "http-client": (agents.HTTP_CLIENT_AGENT, ("network",), "connection"),
    "thread": (agents.THREAD_AGENT, ("network",), "connection"),
    "ctypes-connect": (agents.CTYPES_AGENT, ("native_code", "network"), "connection"),
    "intervened-branch-only": (agents.SOCKET_WHEN_INTERVENED_AGENT, ("network",), "connection"),
    "subprocess": (agents.SUBPROCESS_AGENT, ("process_spawn",), "file"),
    "os-system": (agents.OS_SYSTEM_AGENT, ("process_spawn",), "file"),
    "write-outside": (agents.WRITE_OUTSIDE_AGENT, ("write_outside_scratch",), "file"),
    "memory-bomb": (agents.MEMORY_AGENT, ("memory_limit",), "none"),
    "endless-sleep": (agents.SLEEP_AGENT, ("wall_clock_timeout",), "none"),
    "agent-raises": (agents.RAISING_AGENT, ("agent_error",), "none"),
}


@dataclass
class Result:
    outcome: AuditOutcome
    connections: int
    target: Path
    failed_entries: list[dict[str, Any]]
    certified: bool


@dataclass
class World:
    runtime: Runtime
    home: Path
    results: dict[str, Result] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # outputs and exception texts
    logs: list[str] = field(default_factory=list)  # every log record, formatted
    specimens: dict[str, str] = field(default_factory=dict)  # demo incidents


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def _now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("security")
    outside = base / "outside"
    outside.mkdir()
    listener = loopback.listener()
    port = listener.getsockname()[1]
    collect = _Collect()
    collect.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(collect)
    root.setLevel(logging.DEBUG)
    runtime = Runtime.open(Home.init(base / "home"))
    state = World(runtime=runtime, home=base / "home", logs=collect.lines)
    try:
        for name, (agent, _, _) in HOSTILE.items():
            target = outside / f"{name}.txt"
            specimen = agents.capture_specimen(
                runtime, agent, agents.baseline_inputs(port=port, path=str(target))
            )
            limits = SandboxLimits(wall_seconds=3.0) if name == "endless-sleep" else LIMITS
            request = AuditRequest(
                specimen_id=specimen,
                intervention=REPLACE_VALUE,
                purpose="security review",
                requester="test",
                samples=3,
            )
            outcome = run_audit(runtime, request, now=_now(), limits=limits)
            state.results[name] = Result(
                outcome=outcome,
                connections=loopback.accepted(listener),
                target=target,
                failed_entries=[
                    e.body
                    for e in runtime.ledger.entries(kind="audit.failed", subject=outcome.audit_id)
                ],
                certified=bool(
                    runtime.ledger.entries(kind="certificate.issued", subject=outcome.audit_id)
                ),
            )
            state.texts.append(json.dumps(outcome.to_dict()))
            state.texts.append(repr(outcome))
        # refusals and the five demo audits, in the same home
        refused = Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/memo", value="x")
        specimen = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
        for intervention in (
            refused,
            Intervention(Strategy.PERTURB, call_id="main/lookup#0", field="/value", delta=5.0),
        ):
            try:
                run_audit(
                    runtime,
                    AuditRequest(
                        specimen_id=specimen,
                        intervention=intervention,
                        purpose="refusal",
                        requester="test",
                    ),
                    now=_now(),
                )
            except EnclaveError as exc:
                state.texts += [str(exc), repr(exc), repr(exc.args)]
            else:
                raise AssertionError("the intervention should have been refused")
        state.specimens = capture_incidents(runtime)
        for title, request in demo_audits(state.specimens):
            outcome = run_audit(runtime, request, now=_now())
            assert outcome.envelope is not None, title
            state.texts.append(json.dumps(outcome.to_dict()))
        yield state
    finally:
        runtime.close()
        root.removeHandler(collect)
        root.setLevel(old_level)
        listener.close()


# -- each hostile branch fails the audit, and its effect did not happen --------------------


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_replay_fails_the_audit(world: World, name: str) -> None:
    _, reasons, effect = HOSTILE[name]
    result = world.results[name]
    outcome = result.outcome
    assert outcome.classification == "failed"
    assert outcome.failure in reasons, (outcome.failure, outcome.failure_detail)
    assert outcome.envelope is None and outcome.effect is None
    assert not result.certified
    assert [e["reason"] for e in result.failed_entries] == [outcome.failure]
    if effect == "connection":
        assert result.connections == 0
    if effect == "file":
        assert not result.target.exists()


def test_contamination_on_the_intervened_branch_is_caught_in_the_sample_stage(world: World) -> None:
    outcome = world.results["intervened-branch-only"].outcome
    # the gate ran cleanly (the branch behaves on the record); the samples did not
    assert outcome.failure == "network"
    assert outcome.failure_detail == "the replay worker was contaminated"


def test_no_worker_or_scratch_is_left_behind(world: World) -> None:
    scratch = world.home / "scratch"
    assert not scratch.exists() or not any(scratch.iterdir())


# -- the canary sweep -------------------------------------------------------------------------


_cli = cli_runner.run_cli


def test_no_canary_leaves_the_enclave(world: World) -> None:
    world.runtime.close()  # the CLI below is another process on the same home
    home = world.home
    outputs: list[str] = []
    demo = _cli(home, "demo")  # the five demo audits again, through the CLI, as a table
    assert demo.returncode == 0, demo.stderr
    outputs += [demo.stdout, demo.stderr]
    claims_specimen = world.specimens["claims"]
    for extra in ([], ["--json"]):
        done = _cli(
            home,
            "audit",
            claims_specimen,
            "--purpose",
            "sweep",
            "--call",
            "main/fraud_score#0",
            "--field",
            "/fraud_score",
            "--strategy",
            "nullify",
            "--samples",
            "3",
            *extra,
        )
        assert done.returncode == 0, done.stderr
        outputs += [done.stdout, done.stderr]
    # a failed audit through the CLI: its table and JSON
    hostile = world.results["http-client"].outcome.specimen_id
    for extra in ([], ["--json"]):
        done = _cli(
            home,
            "audit",
            hostile,
            "--purpose",
            "sweep",
            "--call",
            "main/lookup#0",
            "--field",
            "/value",
            "--strategy",
            "replace",
            "--value",
            "0.2",
            "--samples",
            "2",
            *extra,
        )
        assert "failed" in done.stdout and "network" in done.stdout, done.stderr
        outputs += [done.stdout, done.stderr]
    # the certificates live in the database; exported, they are files like any other
    done = _cli(home, "certificates", "export", str(home / "certificates"))
    assert done.returncode == 0, done.stderr
    outputs += [done.stdout, done.stderr]
    certificates = sorted((home / "certificates").glob("*.dsse.json"))
    assert len(certificates) >= 12  # five demo audits twice, and the CLI audits
    for path in certificates[:3]:
        for extra in ([], ["--json"]):
            done = _cli(home, "verify", str(path), *extra)
            assert "FAILED" not in done.stdout and '"ok": false' not in done.stdout, done.stdout
            outputs += [done.stdout, done.stderr]
    for path in certificates:
        payload = base64.b64decode(json.loads(path.read_bytes())["payload"])
        assert find_canaries(payload, CANARIES) == [], path.name
    # every file under the home: ledger.db and its -wal, certificates, keys, payloads
    files = [p.name for p in home.rglob("*") if p.is_file()]
    assert "ledger.db" in files
    assert scan_tree(home, CANARIES) == {}
    assert world.texts and outputs
    for text in outputs + world.texts + world.logs:
        assert find_canaries(text.encode(), CANARIES) == [], text[:200]
    # the scanner itself is live: the canaries are in the captured inputs' plaintext
    assert find_canaries(agents.baseline_inputs()["note"].encode(), CANARIES) == [agents.CANARY]
