"""A real enclave service stack for front-end tests: a fresh home with the three
reference incidents captured, the procurement policies active, two analysts, and
``replay-enclave serve`` plus one ``replay-enclave worker`` on loopback.

* ``alice`` (tenant acme, roles auditor + restricted-clearance) may request audits of
  the procurement specimen (its highest classification is restricted);
* ``bob`` (tenant acme, role viewer) may list specimens but not open or audit it;
* ``eve`` (tenant globex, auditor with clearance) sees nothing of tenant acme.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

__all__ = [
    "EnclaveStack",
    "free_port",
    "regress_report",
    "start_service",
    "start_stack",
    "stop",
    "wait_http",
]

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from enclave.cli import main; main()"]
ACTIVE_POLICIES = ("procurement.decider-model.revision", "procurement.supplier-confidence.replace")

_SETUP = """
import json, sys
from pathlib import Path
from enclave._home import Home
from enclave._runtime import Runtime, utc_now
from enclave.cli._demo import capture_incidents
from enclave.governance import activate_policy, add_analyst, load_policy_file, validate_policy

home, policies, active = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
runtime = Runtime.open(Home.init(home))
try:
    specimens = capture_incidents(runtime)
    for path in sorted(policies.glob("*.toml")):
        load_policy_file(runtime, path, now=utc_now())
    for policy_id in active:
        report = validate_policy(runtime, policy_id, None, now=utc_now(), specimen_id=None)
        assert report.ok, report.problems
        activate_policy(runtime, policy_id, None, now=utc_now())
    _, alice = add_analyst(runtime, "alice", tenant="acme",
                           roles=["auditor", "restricted-clearance"], now=utc_now())
    _, bob = add_analyst(runtime, "bob", tenant="acme", roles=["viewer"], now=utc_now())
    _, eve = add_analyst(runtime, "eve", tenant="globex",
                         roles=["auditor", "restricted-clearance"], now=utc_now())
finally:
    runtime.close()
print(json.dumps({"specimens": specimens, "tokens": {"alice": alice, "bob": bob, "eve": eve}}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def wait_http(
    url: str,
    *,
    timeout: float = 60.0,
    proc: subprocess.Popen[bytes] | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            if httpx.get(url, headers=headers, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class EnclaveStack:
    home: Path
    url: str
    tokens: dict[str, str]
    specimens: dict[str, str]
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def issuer_key(self) -> Path:
        return self.home / "keys" / "signing-key.pem.pub"

    @property
    def procurement(self) -> str:
        return self.specimens["procurement"]


def _spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:  # the child keeps its own descriptor
        return subprocess.Popen(
            args, stdout=handle, stderr=subprocess.STDOUT, env=child_env(), cwd=str(log.parent)
        )


def start_service(home: Path, logs: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    proc = _spawn(
        [*CLI, "serve", "--home", str(home), "--host", "127.0.0.1", "--port", str(port)],
        logs / "serve.log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/openapi.json", proc=proc)
    return url, proc


def start_stack(root: Path, *, worker: bool = True) -> EnclaveStack:
    home, logs = root / "home", root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _SETUP,
            str(home),
            str(REPO / "policies" / "interventions"),
            ",".join(ACTIVE_POLICIES),
        ],
        capture_output=True,
        env=child_env(),
        check=False,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError("enclave setup failed:\n" + out.stderr.decode(errors="replace")[-3000:])
    facts = json.loads(out.stdout.decode().strip().splitlines()[-1])
    url, serve = start_service(home, logs)
    stack = EnclaveStack(
        home=home,
        url=url,
        tokens=facts["tokens"],
        specimens=facts["specimens"],
        logs=logs,
        procs=[serve],
    )
    if worker:
        stack.procs.append(_spawn([*CLI, "worker", "--home", str(home)], logs / "worker.log"))
    return stack


RELEASE_TAG = "release-gate/browser"


def regress_report(stack: EnclaveStack, work: Path, *, samples: int = 30) -> dict[str, object]:
    """A signed release report in the stack's service: every reference incident tagged
    ``RELEASE_TAG``, the procurement one also ``must-hold``, then ``replay-enclave
    regress --local`` with a candidate procurement agent whose supplier scores are 0.02
    lower (its decision changes: the gate fails on the procurement specimen; the other
    agents' specimens are not auditable with this candidate). Returns the envelope."""
    from tests.agents.candidates import candidate_source, score_shifted_run

    source = work / "candidate"
    source.mkdir(parents=True)
    (source / "procurement_next.py").write_text(candidate_source(score_shifted_run()))
    home = str(stack.home)
    for specimen in stack.specimens.values():
        tags = [RELEASE_TAG, "must-hold"] if specimen == stack.procurement else [RELEASE_TAG]
        _cli(["specimens", "tag", specimen, *tags, "--home", home], work)
    out = work / "release-report.dsse.json"
    done = _cli(
        [
            "regress",
            "--tag",
            RELEASE_TAG,
            "--candidate",
            "procurement_next:AGENT",
            "--candidate-path",
            str(source),
            "--samples",
            str(samples),
            "--local",
            # the procurement policy declares its approval rule authoritative; so does the gate
            "--authoritative-substitute",
            "approval-policy",
            "--out",
            str(out),
            "--home",
            home,
        ],
        work,
        ok=(0, 5),  # 5: the gate failed, the report is written
    )
    assert done.returncode == 5, "the candidate changes the must-hold specimen's decision"
    envelope: dict[str, object] = json.loads(out.read_text())
    return envelope


def _cli(
    args: list[str], cwd: Path, ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [*CLI, *args], capture_output=True, env=child_env(), cwd=str(cwd), check=False, timeout=900
    )
    if done.returncode not in ok:
        raise RuntimeError(f"{args[0]} failed: " + done.stderr.decode(errors="replace")[-2000:])
    return done
