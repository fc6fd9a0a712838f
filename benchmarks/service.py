"""Service throughput: audits completed per minute by ``replay-enclave worker`` processes.

For each backend (a SQLite home; a PostgreSQL server this script starts and stops
itself, like the test fixture) and each worker count, a fresh home captures the
procurement incident, the workers are started and allowed to finish importing, then
``audits`` small audits are submitted at once and the clock runs until every one is
terminal. Each audit is one prepare job, ``samples / batch_size`` replay jobs and one
finalize job; every prepare and replay job starts one isolated replay worker.

Run: ``python benchmarks/service.py [--audits N] [--samples S] [--batch-size B]
[--workers 1,2] [--backends sqlite,postgres]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from enclave._home import Home  # noqa: E402
from enclave._runtime import Runtime  # noqa: E402
from enclave.cli._demo import capture_incidents  # noqa: E402
from enclave.jobs import audit_status, submit_audit  # noqa: E402
from enclave.replay import AuditRequest, Intervention, Strategy  # noqa: E402

__all__ = ["local_postgres", "measure_service_overhead", "measure_workers"]

WORKER_MAIN = (
    "from enclave.cli import app, main\n"
    "from enclave.cli import _worker_cmd\n"
    "if not any(c.name == 'worker' for c in app.registered_commands):\n"
    "    _worker_cmd.register(app)\n"
    "main()\n"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def local_postgres() -> Iterator[str]:
    """A throwaway PostgreSQL server (fsync on); yields the URL of an empty database."""
    from tests.fixtures.postgres import running_postgres

    with running_postgres(durable=True, max_connections=100) as server:
        server.admin('CREATE DATABASE "bench"')
        yield server.url("bench")


def _request(specimen_id: str, samples: int) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester="bench",
        samples=samples,
        seed=1,
    )


def _start_workers(
    home: Path, env: dict[str, str], count: int, logs: Path
) -> list[subprocess.Popen[bytes]]:
    procs = []
    for n in range(count):
        with open(logs / f"worker-{n}.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        WORKER_MAIN,
                        "worker",
                        "--home",
                        str(home),
                        "--lease-seconds",
                        "30",
                        "--poll-seconds",
                        "0.05",
                        "--worker-id",
                        f"bench-{n}",
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready = sum("started with" in p.read_text() for p in logs.glob("worker-*.log"))
        if ready == count:
            return procs
        time.sleep(0.1)
    raise RuntimeError("workers did not start")


def _stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_workers(
    *,
    audits: int = 10,
    samples: int = 4,
    batch_size: int = 2,
    worker_counts: Sequence[int] = (1, 2),
    backends: Sequence[str] = ("sqlite", "postgres"),
    timeout_seconds: float = 900.0,
) -> list[dict[str, Any]]:
    """Audits completed per minute for each (backend, worker count); one row each."""
    rows: list[dict[str, Any]] = []
    for backend in backends:
        for workers in worker_counts:
            with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
                if backend == "postgres":
                    with local_postgres() as url:
                        rows.append(
                            _measure(
                                Path(tmp),
                                url,
                                audits,
                                samples,
                                batch_size,
                                workers,
                                timeout_seconds,
                                backend,
                            )
                        )
                else:
                    rows.append(
                        _measure(
                            Path(tmp),
                            None,
                            audits,
                            samples,
                            batch_size,
                            workers,
                            timeout_seconds,
                            backend,
                        )
                    )
    return rows


def _measure(
    tmp: Path,
    url: str | None,
    audits: int,
    samples: int,
    batch_size: int,
    workers: int,
    timeout_seconds: float,
    backend: str,
) -> dict[str, Any]:
    home = Home.init(tmp / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    if url is not None:
        env["REPLAY_ENCLAVE_LEDGER_URL"] = url
    runtime = Runtime.open(home, env=env)
    logs = tmp / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        specimen = capture_incidents(runtime)["procurement"]
        procs = _start_workers(home.root, env, workers, logs)
        started = time.monotonic()
        ids = [
            submit_audit(
                runtime,
                _request(specimen, samples),
                tenant_id="acme",
                now=datetime.now(UTC),
                batch_size=batch_size,
            ).audit_id
            for _ in range(audits)
        ]
        submitted = time.monotonic() - started
        while True:
            states = [audit_status(runtime, a) for a in ids]
            if all(s.terminal for s in states):
                break
            if time.monotonic() - started > timeout_seconds:
                raise RuntimeError("audits did not finish in time")
            time.sleep(0.05)
        elapsed = time.monotonic() - started
    finally:
        _stop(procs)
        runtime.close()
    completed = sum(s.status == "COMPLETED" for s in states)
    return {
        "backend": backend,
        "workers": workers,
        "audits": audits,
        "completed": completed,
        "seconds": round(elapsed, 2),
        "submit_ms_per_audit": round(submitted / audits * 1000, 2),
        "audits_per_minute": round(completed / elapsed * 60, 2),
    }


def measure_service_overhead(*, samples: int = 1000, rounds: int = 3) -> dict[str, Any]:
    """One ``samples``-sample procurement audit (model r1 -> r2) requested over HTTP and run
    by one ``replay-enclave worker``, from POST to COMPLETED, against the same audit run
    directly by ``replay-enclave audit`` on the same home, in the same run. Medians."""
    import httpx

    from tests.browser.stack import CLI, child_env, start_stack, stop

    service, direct = [], []
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        stack = start_stack(Path(tmp))
        headers = {"Authorization": f"Bearer {stack.tokens['alice']}"}
        body = {
            "specimen_id": stack.procurement,
            "strategy": "revision",
            "revision": "model=r2",
            "samples": samples,
            "seed": 1,
            "purpose": "purchase-order-review",
        }
        cli = [
            *CLI,
            "audit",
            stack.procurement,
            "--revision",
            "model=r2",
            "--samples",
            str(samples),
            "--purpose",
            "purchase-order-review",
            "--home",
            str(stack.home),
            "--json",
        ]
        try:
            for _ in range(rounds):
                started = time.monotonic()
                posted = httpx.post(f"{stack.url}/api/v1/audits", json=body, headers=headers)
                posted.raise_for_status()
                audit_id = posted.json()["audit_id"]
                while True:
                    state = httpx.get(f"{stack.url}/api/v1/audits/{audit_id}", headers=headers)
                    if state.json()["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                        break
                    time.sleep(0.02)
                service.append(time.monotonic() - started)
                if state.json()["status"] != "COMPLETED":
                    raise RuntimeError("the service audit did not complete")
                started = time.monotonic()
                subprocess.run(cli, check=True, capture_output=True, env=child_env())
                direct.append(time.monotonic() - started)
        finally:
            stop(stack.procs)
    service_s, direct_s = sorted(service)[len(service) // 2], sorted(direct)[len(direct) // 2]
    return {
        "samples": samples,
        "service_seconds": round(service_s, 3),
        "cli_seconds": round(direct_s, 3),
        "ratio": round(service_s / direct_s, 2),
        "target": 1.2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=10)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--overhead-samples", type=int, default=1000)
    args = parser.parse_args()
    overhead = measure_service_overhead(samples=args.overhead_samples)
    print("service overhead: one audit through HTTP + worker vs `replay-enclave audit`")
    print("  ".join(f"{k:>16}" for k in overhead))
    print("  ".join(f"{v!s:>16}" for v in overhead.values()))
    print()
    rows = measure_workers(
        audits=args.audits,
        samples=args.samples,
        batch_size=args.batch_size,
        worker_counts=[int(w) for w in args.workers.split(",")],
        backends=args.backends.split(","),
    )
    print(
        f"audits of {args.samples} samples, batch size {args.batch_size}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    header = (
        "backend",
        "workers",
        "audits",
        "completed",
        "seconds",
        "submit_ms_per_audit",
        "audits_per_minute",
    )
    print("  ".join(f"{h:>20}" for h in header))
    for row in rows:
        print("  ".join(f"{row[h]!s:>20}" for h in header))


if __name__ == "__main__":
    main()
