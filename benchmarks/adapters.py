"""What capture and replay cost an agent built on a framework, against the same agent
without the enclave, measured in one run.

For each adapter's example agent (``examples/``: the openai client at the wire, an
Agents SDK agent with its ``ScriptedModel``, a pydantic-ai agent with its
``FunctionModel``, an MCP client agent whose stdio server starts at capture, a LangGraph
``create_agent`` agent with an in-process chat model),
alternating rounds, medians:

- *capture overhead per agent run*: ``capture`` (every boundary recorded, sealed, the
  specimen appended to the ledger) against the same agent run with a context that
  records nothing (``_Unrecorded``): its live calls made as they are. Target <= 1.2x.
- *replay per run*: ``run_sample_batch`` over N seeds (decryption, an isolated worker,
  each run a fresh process forked from the worker's template, which imported the
  agent's declared frameworks once) divided by its runs, against ``replay_run`` over the
  plaintext trajectory in this process, plus the *fork floor*: fork, a one-frame reply
  over a socketpair, exit and reap of a process that imported the same frameworks,
  measured here. Target: enclave <= 1.5x in-process + the floor.

The hosted model is a local OpenAI-compatible server on loopback
(``examples/local_model_server.py``): a real HTTP exchange, no model latency — the
harshest case for the capture ratio.

    python benchmarks/adapters.py                      # the table
    python benchmarks/adapters.py --runs 50 --samples 100 --rounds 3
    python benchmarks/adapters.py --only MCP --runs 10   # one adapter's row
    python benchmarks/adapters.py --capture-only         # the capture row alone
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from enclave._home import Home  # noqa: E402
from enclave._runtime import Runtime  # noqa: E402
from enclave.capture import AgentSpec, Answer, Context, capture  # noqa: E402
from enclave.replay import AuditRequest, Intervention, Strategy  # noqa: E402
from enclave.replay.runs import open_specimen, replay_run  # noqa: E402
from enclave.replay.stages import repeat_seeds, run_sample_batch  # noqa: E402

TARGET_CAPTURE = 1.2
TARGET_REPLAY = 1.5
FORKS = 200
ROWS = ("capture per agent run", "replay per run", "fork floor")


class _Unrecorded(Context):
    """A context that records and serves nothing: every call asks the world."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._random = random.Random(seed)

    def call(
        self, spec: Any, request: Mapping[str, Any], *, live: Any, alias: str | None = None
    ) -> Mapping[str, Any]:
        answer = live(request)
        return answer.response if isinstance(answer, Answer) else answer

    def now(self) -> datetime:
        return datetime.now(UTC)

    def random(self, stream: str | None = None) -> random.Random:
        return self._random if stream is None else random.Random(f"{self.seed}/{stream}")


@dataclass(frozen=True)
class Case:
    label: str
    agent: AgentSpec
    inputs: Callable[[str], dict[str, Any]]  # from the model server's base URL
    intervention: Intervention


@contextmanager
def _model_server() -> Iterator[str]:
    import local_model_server

    server = ThreadingHTTPServer(("127.0.0.1", 0), local_model_server._Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _cases() -> list[Case]:
    import langgraph_agent
    import mcp_agent
    import openai_agents_agent
    import openai_client_agent
    import pydantic_ai_agent

    return [
        Case(
            "openai client (wire)",
            openai_client_agent.AGENT,
            lambda url: {"applicant": "A-7", "base_url": url},
            Intervention(Strategy.REPLACE, call_id="main/risk#0", field="/note", value="none"),
        ),
        Case(
            "OpenAI Agents SDK (ScriptedModel)",
            openai_agents_agent.AGENT,
            lambda _url: {"input": "Order A-1042 never arrived, please refund it."},
            Intervention(
                Strategy.REPLACE,
                call_id="main/order_status#0",
                field="/output/delivered",
                value=True,
            ),
        ),
        Case(
            "pydantic-ai (FunctionModel)",
            pydantic_ai_agent.AGENT,
            lambda _url: {"input": "T-1001: customer asks for a refund", "tier": "standard"},
            Intervention(
                Strategy.REPLACE, call_id="main/sentiment#0", field="/output/confidence", value=0.5
            ),
        ),
        Case(
            "MCP client (stdio server)",
            mcp_agent.AGENT,
            lambda _url: {"order": "PO-7731: 40 pallets", "quantity": 40},
            Intervention(
                Strategy.REPLACE,
                call_id="main/quotes#1",
                field="/result/structuredContent/price",
                value=1000.0,
            ),
        ),
        Case(
            "LangGraph (create_agent, in-process chat model)",
            langgraph_agent.AGENT,
            lambda _url: {"input": "T-1001: customer asks for a refund"},
            Intervention(
                Strategy.REPLACE, call_id="main/sentiment#0", field="/output/confidence", value=0.5
            ),
        ),
    ]


def _fork_floor(frameworks: tuple[str, ...]) -> float:
    """Seconds per fork + one-frame reply + exit + reap, in a process holding the same
    frameworks as the worker's template."""
    code = f"""
import os, socket, time
for name in {list(frameworks)!r}:
    __import__(name)
start = time.perf_counter()
for _ in range({FORKS}):
    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        parent.close(); child.sendall(b"x" * 64); os._exit(0)
    child.close(); parent.recv(64); parent.close(); os.waitpid(pid, 0)
print((time.perf_counter() - start) / {FORKS})
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def _median_per(fn: Callable[[], Any], count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count


def measure(
    case: Case, runs: int, samples: int, rounds: int, *, capture_only: bool = False
) -> dict[str, float]:
    now = datetime.now(UTC) + timedelta(minutes=1)
    plain: list[float] = []
    captured: list[float] = []
    bare: list[float] = []
    enclave: list[float] = []
    with tempfile.TemporaryDirectory(prefix="adapters-bench-") as tmp, _model_server() as url:
        runtime = Runtime.open(Home.init(Path(tmp) / "home"))
        try:
            inputs = case.inputs(url)
            specimen = capture(runtime, case.agent, inputs, tenant_id="acme", seed=7)
            trajectory = open_specimen(
                runtime, specimen.specimen_id, job_id="bench", lease_seconds=600, now=now
            ).trajectory
            request = AuditRequest(
                specimen_id=specimen.specimen_id,
                intervention=case.intervention,
                purpose="benchmark",
                requester="benchmark",
                samples=samples,
                seed=1,
            )

            def unrecorded() -> None:
                case.agent.run(_Unrecorded(7), dict(inputs))

            def recorded() -> None:
                capture(runtime, case.agent, dict(inputs), tenant_id="acme", seed=7)

            def in_process() -> None:
                run = replay_run(
                    trajectory=trajectory, agent=case.agent, seed=7, variant="b", audit_time=now
                )
                assert run.failure is None, run.failure

            unrecorded()  # warm both
            in_process()
            seeds = list(range(1, samples + 1))
            worker_runs = 3 * (samples + len(repeat_seeds(seeds)))
            for r in range(rounds):
                plain.append(_median_per(unrecorded, runs))
                captured.append(_median_per(recorded, runs))
                if capture_only:
                    continue
                bare.append(_median_per(in_process, runs))
                start = time.perf_counter()
                result = run_sample_batch(
                    runtime, request, audit_id=f"au-{r}", job_id=f"b-{r}", seeds=seeds, now=now
                )
                assert result.failure is None, result.failure
                enclave.append((time.perf_counter() - start) / worker_runs)
        finally:
            runtime.close()
    if capture_only:
        return {"plain": statistics.median(plain), "captured": statistics.median(captured)}
    return {
        "plain": statistics.median(plain),
        "captured": statistics.median(captured),
        "bare": statistics.median(bare),
        "enclave": statistics.median(enclave),
        "floor": _fork_floor(case.agent.frameworks),
    }


def table(case: Case, m: Mapping[str, float], runs: int, samples: int, rounds: int) -> str:
    capture_ratio = m["captured"] / m["plain"]
    lines = [
        f"{case.label}: {runs} runs per round, audits of {samples} samples, "
        f"median of {rounds} rounds",
        f"{'measure':<24}{'enclave ms':>12}{'reference ms':>14}{'ratio':>8}{'target':>9}  verdict",
        f"{ROWS[0]:<24}{m['captured'] * 1e3:>12.3f}{m['plain'] * 1e3:>14.3f}"
        f"{capture_ratio:>7.2f}x{TARGET_CAPTURE:>8.1f}x  "
        + ("met" if capture_ratio <= TARGET_CAPTURE else "MISSED"),
    ]
    if "enclave" not in m:  # --capture-only
        return "\n".join(lines)
    replay_ratio = m["enclave"] / (m["bare"] + m["floor"])
    lines += [
        f"{ROWS[1]:<24}{m['enclave'] * 1e3:>12.3f}{(m['bare'] + m['floor']) * 1e3:>14.3f}"
        f"{replay_ratio:>7.2f}x{TARGET_REPLAY:>8.1f}x  "
        + ("met" if replay_ratio <= TARGET_REPLAY else "MISSED"),
        f"{'  in-process replay':<24}{'':>12}{m['bare'] * 1e3:>14.3f}",
        f"{'  ' + ROWS[2]:<24}{'':>12}{m['floor'] * 1e3:>14.3f}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100, help="agent runs per round")
    parser.add_argument("--samples", type=int, default=200, help="paired samples per audit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="the cases whose label holds this text")
    parser.add_argument(
        "--capture-only", action="store_true", help="the capture row alone (no audits)"
    )
    args = parser.parse_args(argv)
    for case in (c for c in _cases() if args.only in c.label):
        print(
            table(
                case,
                measure(case, args.runs, args.samples, args.rounds, capture_only=args.capture_only),
                args.runs,
                args.samples,
                args.rounds,
            )
        )


if __name__ == "__main__":
    main()
