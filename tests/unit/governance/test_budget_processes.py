"""The disclosure budget holds across processes sharing one ledger (SQLite file or
PostgreSQL server): admissions are checked and recorded under the chain's tip lock."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.cli import capture_incidents
from enclave.governance import Analyst, BudgetExhausted, admit_audit
from ledger import Conflict, EntryRecord
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree
from tests.unit.governance.test_governance import T0, active, draft, policy_text

BUDGET = 3
CONTENDERS = 7


def _contend(home: str, env: dict[str, str], specimen: str, start: Any, out: Any) -> None:
    runtime = Runtime.open(Home.open(Path(home)), env=env)
    alice = Analyst(name="alice", tenant="acme", roles=("auditor",), created_at="x")
    start.wait()
    try:
        admit_audit(runtime, draft(specimen), analyst=alice, now=T0, submit=lambda r, k: k)
        out.put("ok")
    except BudgetExhausted:
        out.put("429")
    finally:
        runtime.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_budget_holds_across_processes(backend: str, tmp_path: Path, request: Any) -> None:
    env: dict[str, str] = {}
    if backend == "postgres":
        env["REPLAY_ENCLAVE_LEDGER_URL"] = request.getfixturevalue("postgres_url")
    runtime = Runtime.open(Home.init(tmp_path / "home"), env=env)
    try:
        specimen = capture_incidents(runtime)["procurement"]
        active(runtime, policy_text(budget={"audits": BUDGET, "window_seconds": 3600}))
    finally:
        runtime.close()
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_contend, args=(str(tmp_path / "home"), env, specimen, start, out))
        for _ in range(CONTENDERS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    outcomes = sorted(out.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
    assert outcomes == ["429"] * (CONTENDERS - BUDGET) + ["ok"] * BUDGET
    runtime = Runtime.open(Home.open(tmp_path / "home"), env=env)
    try:
        assert len(runtime.ledger.entries(kind="audit.admitted", subject=specimen)) == BUDGET
        assert runtime.ledger.verify().ok
        # admissions and their ledger rows carry metadata only: no captured content
        bodies = [e.body for e in runtime.ledger.entries(kind="audit.admitted")]
        assert not find_canaries(repr(bodies).encode(), INCIDENT_CANARIES)
    finally:
        runtime.close()
    assert not scan_tree(tmp_path / "home")


def test_append_checked_writes_nothing_when_refused(tmp_path: Path) -> None:
    runtime = Runtime.open(Home.init(tmp_path / "home"), env={})
    try:
        ledger = runtime.ledger
        ledger.append("note", "s", {"n": 1})

        def refuse(seen: list[EntryRecord]) -> None:
            assert [e.body["n"] for e in seen] == [1]
            raise Conflict("refused by the rule")

        head = ledger.head()
        with pytest.raises(Conflict):
            ledger.append_checked("note", "s", {"n": 2}, among=("note", "s"), check=refuse)
        assert ledger.head() == head
        position = ledger.append_checked(
            "note", "s", {"n": 2}, among=("note", "s"), check=lambda seen: None
        )
        assert position.index == head.index + 1
    finally:
        runtime.close()
