"""Durable audits under process failure: real ``replay-enclave worker`` processes.

(a) chaos: 20 small audits, 2 workers, one of them SIGKILLed (and restarted) 50 times —
    on a shared SQLite home and on a shared PostgreSQL URL: every audit completes with
    exactly one ``certificate.issued`` entry and one stored certificate;
(b) a worker SIGSTOPped past its lease and then SIGCONTed: its commit is rejected and
    its successor's result stands;
(c) every worker killed mid-audit, fresh ones started: the audits finish.

Every wait is bounded by a deadline.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import Home, Runtime
from enclave.cli import capture_incidents
from enclave.jobs import AuditStatus, audit_status, certificate, list_audits, submit_audit
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.replay.certificates import RuntimeLedgerLookup
from ledger.certificates import envelope_digest, load_public_key_pem, verify_certificate

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
# ``replay-enclave worker`` from this source tree.
WORKER_MAIN = "from enclave.cli import main; main()\n"
LEASE_SECONDS = 3
CHAOS_AUDITS = 20
CHAOS_KILLS = 50


class Workers:
    """``replay-enclave worker`` processes on one home, each logging to its own file."""

    def __init__(self, home: Path, logs: Path, env: dict[str, str]) -> None:
        self.home, self.logs, self.env = home, logs, env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ids: dict[str, str] = {}  # slot -> worker id of its current process
        self.started = 0
        logs.mkdir(exist_ok=True)

    def start(self, name: str) -> None:
        self.started += 1
        self.ids[name] = f"{name}.{self.started}" if name in self.ids else name
        log = open(self.logs / f"{name}-{self.started}.log", "wb")  # noqa: SIM115
        self.procs[name] = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER_MAIN,
                "worker",
                "--home",
                str(self.home),
                "--lease-seconds",
                str(LEASE_SECONDS),
                "--poll-seconds",
                "0.1",
                "--worker-id",
                self.ids[name],
            ],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()

    def signal(self, name: str, sig: int) -> None:
        self.procs[name].send_signal(sig)

    def stopped(self, name: str) -> bool:
        """Whether every thread of the worker is in the stopped state."""
        states = []
        for task in Path(f"/proc/{self.procs[name].pid}/task").iterdir():
            try:
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:  # a thread that ended meanwhile
                continue
        return all(state == "T" for state in states)

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.kill()
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def log_text(self, name: str) -> str:
        return "\n".join(p.read_text() for p in sorted(self.logs.glob(f"{name}-*.log")))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_home(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> tuple[Home, dict[str, str]]:
    home = Home.init(tmp_path / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    if backend == "postgres":
        env["REPLAY_ENCLAVE_LEDGER_URL"] = request.getfixturevalue("postgres_url")
    return home, env


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[[Home, dict[str, str]], Workers]]:
    made: list[Workers] = []

    def make(home: Home, env: dict[str, str]) -> Workers:
        made.append(Workers(home.root, tmp_path / "logs", env))
        return made[-1]

    yield make
    for pool in made:
        pool.stop_all()


def request_for(specimen_id: str, *, samples: int) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester="chaos",
        samples=samples,
        seed=1,
    )


def submit_many(rt: Runtime, count: int, *, samples: int, batch_size: int) -> list[str]:
    specimen = capture_incidents(rt)["procurement"]
    return [
        submit_audit(
            rt,
            request_for(specimen, samples=samples),
            tenant_id="acme",
            now=datetime.now(UTC),
            batch_size=batch_size,
            max_attempts=40,
        ).audit_id
        for _ in range(count)
    ]


def wait_for(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def statuses(rt: Runtime, audit_ids: list[str]) -> dict[str, AuditStatus]:
    return {a: audit_status(rt, a) for a in audit_ids}


def all_terminal(rt: Runtime, audit_ids: list[str]) -> bool:
    return all(s.terminal for s in statuses(rt, audit_ids).values())


def job_rows(rt: Runtime, where: str = "1 = 1", **params: Any) -> list[dict[str, Any]]:
    with rt.ledger.engine.connect() as conn:
        rows = conn.execute(sa.text(f"SELECT * FROM jobs WHERE {where}"), params).all()  # noqa: S608
    return [dict(r._mapping) for r in rows]


def assert_one_certificate_each(rt: Runtime, audit_ids: list[str]) -> None:
    key = load_public_key_pem(Path(f"{rt.home.signing_key_path}.pub").read_bytes())
    lookup = RuntimeLedgerLookup(rt.ledger)
    for audit_id in audit_ids:
        status = audit_status(rt, audit_id)
        assert status.status == "COMPLETED", (audit_id, status.status, status.failure_code)
        entries = rt.ledger.entries(subject=audit_id)
        issued = [e for e in entries if e.kind == "certificate.issued"]
        assert len(issued) == 1, audit_id
        assert not [e for e in entries if e.kind in ("audit.failed", "audit.cancelled")]
        envelope = certificate(rt, audit_id)
        assert envelope is not None
        assert issued[0].body["envelope_digest"] == envelope_digest(envelope)
        assert verify_certificate(envelope, public_key=key, ledger_lookup=lookup).ok
    assert rt.ledger.verify().ok


# -- (a) ---------------------------------------------------------------------------------


@pytest.mark.timeout(420)
def test_chaos_every_audit_completes_once(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    backend: str,
    workers: Callable[[Home, dict[str, str]], Workers],
) -> None:
    home, env = make_home(tmp_path, request, backend)
    rt = Runtime.open(home, env=env)
    try:
        audit_ids = submit_many(rt, CHAOS_AUDITS, samples=4, batch_size=2)
        pool = workers(home, env)
        names = ["w0", "w1"]
        for name in names:
            pool.start(name)
        chaos = random.Random(20250301)
        interrupted = 0
        for _ in range(CHAOS_KILLS):
            # aim at a worker in the middle of a job when there is one (most kills then
            # interrupt real work), else at any worker; bounded waits only, long enough
            # for a restarted worker to lease again on a loaded 2-core machine
            deadline = time.monotonic() + 6.0
            working: list[str] = []
            while not working and time.monotonic() < deadline:
                owners = {r["lease_owner"] for r in job_rows(rt, "status = 'leased'")}
                working = [n for n in names if pool.ids[n] in owners]
                time.sleep(0.05)
            victim = chaos.choice(working or names)
            time.sleep(chaos.uniform(0.0, 0.3))
            interrupted += bool(working)
            pool.kill(victim)
            pool.start(victim)
        wait_for(lambda: all_terminal(rt, audit_ids), timeout=200, what="every audit to finish")
        assert_one_certificate_each(rt, audit_ids)
        rows = job_rows(rt)
        assert len(rows) == CHAOS_AUDITS * 4  # audit + 2 replay + finalize each
        assert {r["status"] for r in rows} == {"done"}
        assert sum(r["attempts"] - 1 for r in rows) >= 5  # the kills interrupted real work
        assert pool.started == 2 + CHAOS_KILLS and interrupted >= 5
    finally:
        rt.close()


# -- (b) ---------------------------------------------------------------------------------


def _stop_outside_a_write(pool: Any, name: str, database: Path) -> None:
    """SIGSTOP the worker at a moment it holds no SQLite write transaction (a replay job
    writes its progress as it goes): a worker frozen inside one would block every writer,
    its successor included, which is SQLite's locking and not what this test is about."""
    for _ in range(100):
        pool.signal(name, signal.SIGSTOP)
        # kill() returns before every thread has stopped: probing earlier could pass just
        # before the worker begins a write it is then frozen inside
        wait_for(lambda: pool.stopped(name), timeout=10, what="the worker to stop")
        probe = sqlite3.connect(database, timeout=0.2)
        try:
            probe.execute("BEGIN EXCLUSIVE")
            probe.rollback()
            return
        except sqlite3.OperationalError:
            pool.signal(name, signal.SIGCONT)
            time.sleep(random.uniform(0.01, 0.1))  # noqa: S311 - timing jitter only
        finally:
            probe.close()
    raise AssertionError("the worker held a write transaction at every stop")


def test_stopped_worker_cannot_overwrite_its_successor(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    workers: Callable[[Home, dict[str, str]], Workers],
) -> None:
    home, env = make_home(tmp_path, request, "sqlite")
    rt = Runtime.open(home, env=env)
    try:
        # one replay job of 200 seeds: a few seconds inside the replay worker (every run is
        # its own process, ~15 ms each), so the first worker can be stopped there and not
        # while it holds a database lock
        (audit_id,) = submit_many(rt, 1, samples=200, batch_size=200)
        pool = workers(home, env)
        pool.start("w-first")

        def first_worker_inside_replay() -> bool:
            leased = job_rows(
                rt, "audit_id = :a AND kind = 'replay' AND status = 'leased'", a=audit_id
            )
            return bool(leased) and bool(
                rt.ledger.entries(kind="grant.used", subject=leased[0]["id"])
            )

        wait_for(first_worker_inside_replay, timeout=60, what="the first worker to replay")
        _stop_outside_a_write(pool, "w-first", home.ledger_path)
        (job,) = job_rows(rt, "audit_id = :a AND kind = 'replay'", a=audit_id)
        assert (job["lease_owner"], job["fencing_token"]) == ("w-first", 1)
        pool.start("w-next")

        def successor_done() -> bool:
            return job_rows(rt, "id = :id", id=job["id"])[0]["status"] == "done"

        # 200 seeds take ~10 s on an idle machine; the bound leaves room for a loaded one
        wait_for(successor_done, timeout=150, what="the successor to finish the job")
        pool.signal("w-first", signal.SIGCONT)
        wait_for(
            lambda: "commit rejected" in pool.log_text("w-first"),
            timeout=30,
            what="the stopped worker's commit to be rejected",
        )
        wait_for(lambda: audit_status(rt, audit_id).terminal, timeout=60, what="the audit")
        pool.stop_all()
        (after,) = job_rows(rt, "id = :id", id=job["id"])
        assert (after["lease_owner"], after["fencing_token"], after["attempts"]) == ("w-next", 2, 2)
        grants = rt.ledger.entries(kind="grant.used", subject=job["id"])
        assert len(grants) == 2  # one per attempt, in claim order
        result = json.loads(after["result_json"])
        assert result["grant"]["accessor"] == grants[1].body["accessor"]  # the successor's
        assert result["grant"]["accessor"] != grants[0].body["accessor"]
        assert f"job {job['id']} attempt 1: commit rejected" in pool.log_text("w-first")
        assert_one_certificate_each(rt, [audit_id])
    finally:
        rt.close()


# -- (c) ---------------------------------------------------------------------------------


def test_service_restarted_mid_audit(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    workers: Callable[[Home, dict[str, str]], Workers],
) -> None:
    home, env = make_home(tmp_path, request, "sqlite")
    rt = Runtime.open(home, env=env)
    try:
        audit_ids = submit_many(rt, 6, samples=8, batch_size=2)
        first = workers(home, env)
        for name in ("a0", "a1"):
            first.start(name)
        wait_for(
            lambda: any(r["kind"] == "replay" and r["status"] == "done" for r in job_rows(rt)),
            timeout=90,
            what="some replay progress",
        )
        for name in ("a0", "a1"):
            first.kill(name)
        midway = statuses(rt, audit_ids)
        assert not all(s.status == "COMPLETED" for s in midway.values())
        assert any(s.progress_done > 0 for s in midway.values())
        second = workers(home, env)
        for name in ("b0", "b1"):
            second.start(name)
        wait_for(lambda: all_terminal(rt, audit_ids), timeout=120, what="the audits to finish")
        assert_one_certificate_each(rt, audit_ids)
        assert sorted(s.audit_id for s in list_audits(rt, requester="chaos")) == sorted(audit_ids)
    finally:
        rt.close()
