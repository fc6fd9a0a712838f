"""Service throughput: audits completed per minute by ``replay-enclave worker`` processes.

For each backend (a SQLite home; a PostgreSQL server this script starts and stops
itself, like the test fixture) and each worker count, a fresh home captures the
procurement incident, the workers are started and allowed to finish importing (and to
start their zygotes), then
``audits`` small audits are submitted at once and the clock runs until every one is
terminal. Each audit is one prepare job, ``samples / batch_size`` replay jobs and one
finalize job; a prepare job starts one isolated replay worker, a replay job two (the
second replays a share of the seeds again). Each configuration runs with the workers'
zygotes (``--zygote``: each job's isolated worker forked from a pre-imported, sandboxed
process) and without (``--no-zygote``: bubblewrap and an interpreter per isolated
worker), in one run; the table gives the ratio of each worker count's rate to one
worker's, the load average before each configuration, how busy the machine's CPUs
were during it (``machine_busy``, all processes: on a shared machine others' work
counts) and the CPU time the driver itself spent (it polls the audits' status every
``POLL_SECONDS``, only the unfinished).

Run: ``python benchmarks/service.py [--audits N] [--samples S] [--batch-size B]
[--workers 1,2,4] [--backends sqlite,postgres] [--zygote both|on|off]
[--payload-store files|database] [--skip-overhead]``.

One big audit on many workers: ``--audits 1 --samples 10000 --batch-size 250`` (its 40
replay jobs are claimed by whichever worker is free; ``samples_per_second`` is the rate).

Read-load mode (``--read-load``): a home seeded with ``--specimens`` specimens (sealed in
batches through ``Ledger.seal_many``) and ``--certificates`` completed audits (one real
audit run by an in-process worker; the others submitted through ``submit_audit`` and
concluded with a copy of its certificate — a seeding shortcut, the rows are what a
worker writes), served by ``replay-enclave serve`` on SQLite and on PostgreSQL;
``--clients`` concurrent clients for ``--seconds`` against the list, filter and detail
routes (list clients follow ``next`` cursors ten pages deep), then ``/whoami`` alone
and while 45 clients run filter queries. The clients are wrk's (``apt-get install wrk``;
``_read_client.lua``), so the load generator takes little of the CPUs the service runs
on. They are closed loops (the next request as soon as the answer arrives: a saturation
test, where latency is clients / throughput) unless ``--think-ms`` gives each a pause
after each answer. The reference, measured in the same run by the same clients: a
do-nothing FastAPI route served as the service is (``_floor_app.py``), the floor no
route can beat on this machine; ``vs_floor`` is each route's p99 over the floor's. Run:
``python
benchmarks/service.py --read-load [--seconds 30] [--backends sqlite,postgres]
[--serve-workers 2] [--think-ms 500]``.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from enclave._home import Home  # noqa: E402
from enclave._runtime import Runtime  # noqa: E402
from enclave.cli._demo import capture_incidents  # noqa: E402
from enclave.jobs import audit_status, submit_audit  # noqa: E402
from enclave.replay import AuditRequest, Intervention, Strategy  # noqa: E402

__all__ = ["local_postgres", "measure_read_load", "measure_service_overhead", "measure_workers"]

# The labels the tables print beside their figures: the overhead line's, the worker
# table's columns (one row per backend, zygote and worker count) and the read-load
# table's columns and summary (tests/project/test_docs.py checks the ones docs/benchmarks.md cites).
OVERHEAD = "service overhead"
WORKER_COLUMNS = (
    "backend",
    "zygote",
    "workers",
    "audits",
    "completed",
    "seconds",
    "submit_ms_per_audit",
    "audits_per_minute",
    "samples_per_second",
    "ratio",
    "load_before",
    "driver_cpu_s",
    "machine_busy",
)
READ_COLUMNS = ("kind", "route", "requests", "p50_ms", "p99_ms", "errors", "vs_floor", "target")
ALL_ROUTES = "all routes together"
WHOAMI_ALONE = "alone_p99_ms"
WHOAMI_BUSY = "under_45_filters_p99_ms"
ROWS = (OVERHEAD, *WORKER_COLUMNS, *READ_COLUMNS, ALL_ROUTES, WHOAMI_ALONE, WHOAMI_BUSY)

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


POLL_SECONDS = 0.2


def _start_workers(
    home: Path, env: dict[str, str], count: int, logs: Path, zygote: bool = True
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
                        "--zygote" if zygote else "--no-zygote",
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        # each thread logs "claiming" once its zygotes (if any) are up
        ready = sum(": claiming" in p.read_text() for p in logs.glob("worker-*.log"))
        if ready == count:
            return procs
        time.sleep(0.1)
    raise RuntimeError("workers did not start")


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs of the machine (``/proc/stat``), whoever used them."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def _database(backend: str) -> Iterator[str | None]:
    """A fresh PostgreSQL database's URL, or None (the home's SQLite ledger)."""
    if backend != "postgres":
        yield None
        return
    with local_postgres() as url:
        yield url


def measure_workers(
    *,
    audits: int = 10,
    samples: int = 4,
    batch_size: int = 2,
    worker_counts: Sequence[int] = (1, 2),
    backends: Sequence[str] = ("sqlite", "postgres"),
    zygote: Sequence[bool] = (True, False),
    timeout_seconds: float = 900.0,
    payload_store: str = "files",
) -> list[dict[str, Any]]:
    """Audits completed per minute for each (backend, zygote, worker count); one row each,
    with ``ratio``: the rate over the same backend's and mode's rate with one worker."""
    rows: list[dict[str, Any]] = []
    for backend in backends:
        for with_zygote in zygote:
            for workers in worker_counts:
                with (
                    tempfile.TemporaryDirectory(prefix="bench-service-") as tmp,
                    _database(backend) as url,
                ):
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
                            with_zygote,
                            payload_store,
                        )
                    )
    for row in rows:
        one = next(
            (
                r
                for r in rows
                if (r["backend"], r["zygote"], r["workers"]) == (row["backend"], row["zygote"], 1)
            ),
            None,
        )
        row["ratio"] = (
            round(row["audits_per_minute"] / one["audits_per_minute"], 2)
            if one and one["audits_per_minute"]
            else None
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
    zygote: bool = True,
    payload_store: str = "files",
) -> dict[str, Any]:
    home = Home.init(tmp / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["REPLAY_ENCLAVE_PAYLOAD_STORE"] = payload_store
    if url is not None:
        env["REPLAY_ENCLAVE_LEDGER_URL"] = url
    runtime = Runtime.open(home, env=env)
    logs = tmp / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    load = os.getloadavg()[0]
    try:
        specimen = capture_incidents(runtime)["procurement"]
        procs = _start_workers(home.root, env, workers, logs, zygote)
        cpu = time.process_time()
        ticks = _cpu_ticks()
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
        pending, states = list(ids), {}
        while pending:
            for audit_id in pending:
                states[audit_id] = audit_status(runtime, audit_id)
            pending = [a for a in pending if not states[a].terminal]
            if time.monotonic() - started > timeout_seconds:
                raise RuntimeError("audits did not finish in time")
            if pending:
                time.sleep(POLL_SECONDS)
        elapsed = time.monotonic() - started
        driver_cpu = time.process_time() - cpu
        busy, total = (b - a for a, b in zip(ticks, _cpu_ticks(), strict=True))
    finally:
        _stop(procs)
        runtime.close()
    completed = sum(s.status == "COMPLETED" for s in states.values())
    return {
        "backend": backend,
        "zygote": zygote,
        "workers": workers,
        "audits": audits,
        "completed": completed,
        "seconds": round(elapsed, 2),
        "submit_ms_per_audit": round(submitted / audits * 1000, 2),
        "audits_per_minute": round(completed / elapsed * 60, 2),
        "samples_per_second": round(completed * samples / elapsed, 1),
        "load_before": round(load, 2),
        "driver_cpu_s": round(driver_cpu, 2),
        "machine_busy": round(busy / total, 2) if total else None,
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


# -- read load -------------------------------------------------------------------------

READ_TARGET_MS = 100.0
WHOAMI_TARGET_RATIO = 2.0


def _seed_reads(
    runtime: Runtime, env: dict[str, str], specimens: int, certificates: int
) -> tuple[list[str], list[str]]:
    """Specimens sealed in batches; ``certificates`` concluded audits (see the module doc)."""
    import threading

    import sqlalchemy as sa

    from enclave.jobs import certificate, run_worker
    from ledger import EffectInfo
    from tests.support.reads_world import CLASSES, synthetic_specimen

    ids: list[str] = []
    batch = []
    for i in range(specimens):
        effects: tuple[EffectInfo, ...] = ()
        if i % 3 == 1:
            effects = (EffectInfo("tok", "2099-01-01T00:00:00Z", True),)
        elif i % 3 == 2:
            effects = (EffectInfo("tok", "2025-03-01T10:00:35Z", False, ("lock_id",)),)
        batch.append(
            synthetic_specimen(
                f"sp-load-{i:06d}",
                agent_name="procurement" if i % 2 else "claims",
                classification=CLASSES[i % 4],
                effects=effects,
            )
        )
        if len(batch) == 1000 or i == specimens - 1:
            runtime.ledger.seal_many(batch)
            ids += [r.specimen_id for r in batch]
            batch = []
    specimen = capture_incidents(runtime)["procurement"]
    first = submit_audit(
        runtime, _request(specimen, 4), tenant_id="acme", now=datetime.now(UTC)
    ).audit_id
    run_worker(
        lambda: Runtime.open(runtime.home, env=env),
        worker_id="seed",
        stop=threading.Event(),
        once=True,
    )
    envelope = certificate(runtime, first)
    if envelope is None:
        raise RuntimeError("the seeding audit did not complete")
    audits = [first]
    for _ in range(certificates - 1):
        audits.append(
            submit_audit(
                runtime, _request(specimen, 4), tenant_id="acme", now=datetime.now(UTC)
            ).audit_id
        )
    with runtime.ledger.engine.begin() as conn:
        done = conn.execute(
            sa.text(
                "SELECT status, classification, auditability, certificate_json, ledger_index "
                "FROM audits WHERE id = :id"
            ),
            {"id": first},
        ).one()
        conn.execute(
            sa.text(
                "UPDATE audits SET status = :s, classification = :c, auditability = :a, "
                "certificate_json = :j, ledger_index = :i WHERE id <> :first"
            ),
            {"s": done[0], "c": done[1], "a": done[2], "j": done[3], "i": done[4], "first": first},
        )
        conn.execute(sa.text("UPDATE jobs SET status = 'done' WHERE status = 'queued'"))
    return ids, audits


def _serve(home: Path, env: dict[str, str], port: int, workers: int, log: Path) -> Any:
    """``replay-enclave serve`` on ``home``, once it accepts connections."""
    argv = ["serve", "--home", str(home), "--port", str(port), "--workers", str(workers)]
    return _listening(
        [sys.executable, "-c", "from enclave.cli import main; main()", *argv], env, port, log
    )


def _serve_floor(env: dict[str, str], port: int, workers: int, log: Path) -> Any:
    """``_floor_app``'s do-nothing route, served as the service is."""
    code = f"from benchmarks._floor_app import serve; serve({port}, {workers})"
    return _listening([sys.executable, "-c", code], env, port, log)


def _listening(argv: list[str], env: dict[str, str], port: int, log: Path) -> Any:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=out)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.2)


_READ_CLIENT = Path(__file__).with_name("_read_client.lua")


@dataclass(frozen=True)
class _Client:
    """What one kind of read-load client asks for (``_read_client.lua``'s modes)."""

    name: str
    mode: str  # "fixed", "pages" or "one_of"
    path: str
    ids: tuple[str, ...] = ()


def _drive(
    base: str,
    token: str,
    plan: Sequence[_Client],
    seconds: float,
    think: float = 0.0,
    *,
    work: Path,
) -> dict[str, dict[str, Any]]:
    """One closed-loop client per entry of ``plan`` for ``seconds`` (pausing ``think``
    seconds on average after each answer): requests, errors and latency percentiles per
    client name. The clients are wrk's, one thread and one connection each, in one wrk
    process per name: a load generator in C takes a few percent of a core where one in
    Python would compete with the service for the same two."""
    import json
    import shutil
    from collections import Counter

    if shutil.which("wrk") is None:
        raise SystemExit("the read-load mode needs wrk (apt-get install wrk)")
    counts = Counter(c.name for c in plan)
    kinds = {c.name: c for c in plan}
    runs: dict[str, subprocess.Popen[str]] = {}
    for name, client in kinds.items():
        ids = work / f"ids-{len(runs)}.txt"
        ids.write_text("\n".join(client.ids) + "\n")
        n = counts[name]
        runs[name] = subprocess.Popen(
            [
                "wrk",
                f"-t{n}",
                f"-c{n}",
                f"-d{seconds:g}s",
                "--timeout=60s",
                "-s",
                str(_READ_CLIENT),
                base,
                "--",
                client.mode,
                urlsplit(base).path + client.path,
                str(ids),
                f"{think * 1000:g}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "READ_CLIENT_TOKEN": token},  # not on a command line
        )
    results: dict[str, dict[str, Any]] = {}
    for name, proc in runs.items():
        out, err = proc.communicate(timeout=seconds + 120)
        if proc.returncode != 0:
            raise RuntimeError(f"wrk failed for {name}: {err.strip()[:200]}")
        results[name] = json.loads(out.strip().splitlines()[-1])
    return results


def measure_read_load(
    *,
    backend: str,
    specimens: int = 10_000,
    certificates: int = 1_000,
    clients: int = 50,
    seconds: float = 30.0,
    serve_workers: int = 2,
    think_ms: float = 0.0,
) -> dict[str, Any]:
    """Per-route latency under ``clients`` concurrent clients, and /whoami alone vs
    under 45 filter clients, against ``replay-enclave serve`` on ``backend``."""
    from contextlib import nullcontext

    from enclave.governance import add_analyst
    from tests.fixtures.postgres import running_postgres

    with tempfile.TemporaryDirectory(prefix="bench-reads-") as tmp:
        server = (
            running_postgres(durable=True, max_connections=250)
            if backend == "postgres"
            else nullcontext()
        )
        with server as pg:
            env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
            if pg is not None:
                pg.admin('CREATE DATABASE "bench"')
                env["REPLAY_ENCLAVE_LEDGER_URL"] = pg.url("bench")
            home = Home.init(Path(tmp) / "home")
            runtime = Runtime.open(home, env=env)
            try:
                began = time.monotonic()
                ids, audits = _seed_reads(runtime, env, specimens, certificates)
                if pg is not None:
                    # a library is built over weeks and autovacuum has long visited it;
                    # a bulk seed has not been: without statistics and a visibility map
                    # the planner counts by reading every heap page (4x a settled count)
                    pg.admin("VACUUM ANALYZE", database="bench")
                seeded = time.monotonic() - began
                _, token = add_analyst(
                    runtime,
                    "reader",
                    tenant="acme",
                    roles=["viewer", "restricted-clearance"],
                    now=datetime.now(UTC),
                )
            finally:
                runtime.close()
            port = _free_port()
            proc = _serve(home.root, env, port, serve_workers, Path(tmp) / "serve.log")
            base = f"http://127.0.0.1:{port}/api/v1"
            admissible = "/specimens?auditability=counterfactual-admissible&limit=50"
            routes: list[tuple[str, _Client]] = [
                ("list", _Client("/specimens?limit=50 (+next)", "pages", "/specimens?limit=50")),
                ("filter", _Client(admissible + " (+next)", "pages", admissible)),
                (
                    "filter",
                    _Client(
                        "/specimens?agent=claims&auditability=observable-only",
                        "pages",
                        "/specimens?agent=claims&auditability=observable-only&limit=50",
                    ),
                ),
                ("detail", _Client("/specimens/{id}", "one_of", "/specimens/{}", tuple(ids))),
                ("list", _Client("/audits?limit=50 (+next)", "pages", "/audits?limit=50")),
                ("detail", _Client("/audits/{id}", "one_of", "/audits/{}", tuple(audits))),
                (
                    "detail",
                    _Client(
                        "/certificates/{id}/summary",
                        "one_of",
                        "/certificates/{}/summary",
                        tuple(audits),
                    ),
                ),
            ]
            clients_of = [c for _, c in routes]
            window = min(seconds, 10.0)
            try:
                _drive(base, token, clients_of, 2.0, work=Path(tmp))  # warm up
                plan = [clients_of[n % len(clients_of)] for n in range(clients)]
                load = _drive(base, token, plan, seconds, think_ms / 1000, work=Path(tmp))
                whoami = _Client("/whoami", "fixed", "/whoami")
                alone = _drive(base, token, [whoami], window, work=Path(tmp))["/whoami"]
                filters = [_Client("filter", "pages", admissible)] * 45
                busy = _drive(base, token, [*filters, whoami], window, work=Path(tmp))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
            floor = _floor(env, clients, window, think_ms, serve_workers, token, Path(tmp))
    rows = []
    for kind, client in routes:
        found = load[client.name]
        rows.append(
            {
                "kind": kind,
                "route": client.name,
                "requests": found["requests"],
                "p50_ms": round(found["p50_ms"], 1),
                "p99_ms": round(found["p99_ms"], 1),
                "errors": found["errors"],
                "vs_floor": f"{found['p99_ms'] / floor['p99_ms']:.1f}x",
                "target": f"p99<={READ_TARGET_MS:.0f}",
            }
        )
    alone_p99 = alone["p99_ms"]
    busy_p99 = busy["/whoami"]["p99_ms"]
    return {
        "backend": backend,
        "specimens": specimens,
        "certificates": certificates,
        "think_ms": think_ms,
        "seed_seconds": round(seeded, 1),
        "requests_per_s": round(sum(r["requests"] for r in load.values()) / seconds),
        "rows": rows,
        "floor": {
            "requests_per_s": round(floor["requests"] / window),
            "p50_ms": round(floor["p50_ms"], 1),
            "p99_ms": round(floor["p99_ms"], 1),
            "errors": floor["errors"],
        },
        "whoami": {
            WHOAMI_ALONE: round(alone_p99, 1),
            WHOAMI_BUSY: round(busy_p99, 1),
            "filter_p99_ms": round(busy["filter"]["p99_ms"], 1),
            "ratio": round(busy_p99 / alone_p99, 2),
            "errors": alone["errors"] + busy["/whoami"]["errors"] + busy["filter"]["errors"],
            "target": f"ratio<={WHOAMI_TARGET_RATIO:.0f}",
        },
    }


def _floor(
    env: dict[str, str],
    clients: int,
    seconds: float,
    think_ms: float,
    workers: int,
    token: str,
    work: Path,
) -> dict[str, Any]:
    """The same clients against ``_floor_app``'s do-nothing route (the reference)."""
    port = _free_port()
    proc = _serve_floor(env, port, workers, work / "floor.log")
    base, client = f"http://127.0.0.1:{port}/api/v1", _Client("/floor", "fixed", "/floor")
    try:
        _drive(base, token, [client], 2.0, work=work)  # warm up
        return _drive(base, token, [client] * clients, seconds, think_ms / 1000, work=work)[
            "/floor"
        ]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def print_read_load(result: dict[str, Any]) -> None:
    print(
        f"read load on {result['backend']}: {result['specimens']} specimens, "
        f"{result['certificates']} certificates (seeded in {result['seed_seconds']} s), "
        f"clients pausing {result['think_ms']:g} ms after each answer, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    header = READ_COLUMNS
    widths = (6, 52, 9, 8, 8, 7, 9, 10)
    print("  ".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True)))
    for row in result["rows"]:
        print("  ".join(f"{row[h]!s:<{w}}" for h, w in zip(header, widths, strict=True)))
    floor = result["floor"]
    print(
        f"{ALL_ROUTES}: {result['requests_per_s']} requests/s. Floor, the same clients "
        f"on a do-nothing FastAPI route served alike: {floor['requests_per_s']} requests/s, "
        f"p50 {floor['p50_ms']} ms, p99 {floor['p99_ms']} ms, {floor['errors']} errors"
    )
    print("  ".join(f"{k}={v}" for k, v in result["whoami"].items()))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=10)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--overhead-samples", type=int, default=1000)
    parser.add_argument("--read-load", action="store_true", help="run the read-load mode only")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--specimens", type=int, default=10_000)
    parser.add_argument("--certificates", type=int, default=1_000)
    parser.add_argument("--serve-workers", type=int, default=2)
    parser.add_argument(
        "--think-ms", type=float, default=0.0, help="read load: each client's mean pause"
    )
    parser.add_argument("--zygote", choices=("both", "on", "off"), default="both")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--payload-store", choices=("files", "database"), default="files")
    args = parser.parse_args()
    if args.read_load:
        for backend in args.backends.split(","):
            print_read_load(
                measure_read_load(
                    backend=backend,
                    specimens=args.specimens,
                    certificates=args.certificates,
                    clients=args.clients,
                    seconds=args.seconds,
                    serve_workers=args.serve_workers,
                    think_ms=args.think_ms,
                )
            )
        return
    if not args.skip_overhead:
        overhead = measure_service_overhead(samples=args.overhead_samples)
        print(f"{OVERHEAD}: one audit through HTTP + worker vs `replay-enclave audit`")
        print("  ".join(f"{k:>16}" for k in overhead))
        print("  ".join(f"{v!s:>16}" for v in overhead.values()))
        print()
    rows = measure_workers(
        audits=args.audits,
        samples=args.samples,
        batch_size=args.batch_size,
        worker_counts=[int(w) for w in args.workers.split(",")],
        backends=args.backends.split(","),
        zygote={"both": (True, False), "on": (True,), "off": (False,)}[args.zygote],
        payload_store=args.payload_store,
    )
    print(
        f"audits of {args.samples} samples, batch size {args.batch_size}, "
        f"payloads in {args.payload_store}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    header = WORKER_COLUMNS
    print("  ".join(f"{h:>14}" for h in header))
    for row in rows:
        print("  ".join(f"{row[h]!s:>14}" for h in header))


if __name__ == "__main__":
    main()
