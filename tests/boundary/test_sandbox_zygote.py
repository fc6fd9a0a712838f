"""Workers forked from a zygote (``enclave.sandbox._zygote``) are as separate as fresh ones.

The attacker is agent code of a later job in the same zygote: it reads every process's
memory it can open, ``/proc``, scratch and its module globals for a canary planted in an
earlier job's payload (``tests/agents/zygote_agents.py``). The same hunt inside the earlier
job finds the canary (so the hunt can find it); in the later job it finds nothing. The
zygote itself is read from the host: the canary is never in its memory. A killed zygote
fails its job as a killed fresh worker does and is replaced.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import re
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from enclave.sandbox import (
    Contaminated,
    Sandbox,
    SandboxLimits,
    WorkerHandle,
    Zygotes,
    pooled,
    wire,
)
from tests.boundary.test_sandbox import alive

IN_CI = os.environ.get("CI") == "true"
HANDLER = "tests.agents.zygote_agents:job"
PRELOAD = ("tests.agents.zygote_agents",)
PREFIX = "ZYGOTE-CANARY-"


@pytest.fixture
def zygotes() -> Iterator[Zygotes]:
    if shutil.which("bwrap") is None and not IN_CI:
        pytest.skip("bwrap is not installed")
    pool = Zygotes()
    with pool.activated():
        yield pool
    pool.close()


def _sandbox(tmp_path: Path, **limits: float) -> Sandbox:
    return Sandbox(
        scratch_root=tmp_path / "scratch",
        isolation="bwrap",
        limits=SandboxLimits(wall_seconds=30.0, **limits),  # type: ignore[arg-type]
    )


def _canary() -> tuple[str, str]:
    secret = secrets.token_hex(16)  # SECRET_BYTES characters
    return PREFIX + secret, hashlib.sha256(secret.encode()).hexdigest()


def _zygote_pids(pool: Zygotes) -> list[int]:
    return [z.pid for zs in pool._by_key.values() for z in zs if not z.dead]


def _host_memory(pid: int) -> bytes:
    """Every readable mapping of ``pid`` as the host (the supervisor) sees it."""
    chunks = []
    with open(f"/proc/{pid}/maps", encoding="ascii") as fh:
        regions = [line.split() for line in fh]
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        for fields in regions:
            if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]"):
                continue
            low, high = (int(x, 16) for x in fields[0].split("-"))
            try:
                chunks.append(os.pread(fd, high - low, low))
            except OSError:
                continue
    finally:
        os.close(fd)
    return b"".join(chunks)


def _hunt(worker: WorkerHandle, digest: str) -> dict[str, object]:
    return worker.call({"op": "search", "prefix": PREFIX, "digest": digest})


def test_a_later_job_in_the_same_zygote_finds_nothing_of_an_earlier_one(
    zygotes: Zygotes, tmp_path: Path
) -> None:
    canary, digest = _canary()
    first = _sandbox(tmp_path)
    with first.start(HANDLER, preload=PRELOAD) as job1:
        assert job1.call({"op": "hold", "payload": canary}) == {"held": True}
        inside = _hunt(job1, digest)
        # held again: a run's end empties scratch, the job's end must as well
        assert job1.call({"op": "hold", "payload": canary}) == {"held": True}
        (zygote,) = _zygote_pids(zygotes)
        assert canary.encode() in _host_memory(job1.pid)  # the job's template holds it
        assert canary.encode() not in _host_memory(zygote)
    # the hunt works: inside the job that holds the canary it finds it everywhere it is
    assert {"memory:self", "file:held.txt"} <= set(inside["found"])  # type: ignore[arg-type]
    assert any(f.startswith("memory:") and f != "memory:self" for f in inside["found"])  # type: ignore[attr-defined]

    later = _sandbox(tmp_path)
    with later.start(HANDLER, preload=PRELOAD) as job2:
        assert _zygote_pids(zygotes) == [zygote]  # forked from the same zygote
        result = _hunt(job2, digest)
    assert result["found"] == []
    scanned = result["scanned"]
    assert isinstance(scanned, dict)
    # it did read memory: its own, its template's and the zygote's (pid 1 inside)
    assert scanned["self"] > 1 << 20 and scanned.get("1", 0) > 1 << 20 and len(scanned) >= 3
    assert canary.encode() not in _host_memory(zygote)


def test_the_zygote_never_receives_a_frame_of_job_data(zygotes: Zygotes, tmp_path: Path) -> None:
    """What the supervisor sends the zygote, recorded at the socket: control frames only."""
    sent: list[dict[str, object]] = []
    real_send = wire.send
    real_send_fd = wire.send_with_fd

    def send(sock: object, message: dict[str, object]) -> None:
        sent.append(message)
        real_send(sock, message)  # type: ignore[arg-type]

    def send_with_fd(sock: object, message: dict[str, object], fd: int) -> None:
        sent.append(message)
        real_send_fd(sock, message, fd)  # type: ignore[arg-type]

    canary, digest = _canary()
    mp = pytest.MonkeyPatch()
    # white-box: the functions the zygote module sends with (targets, not imports)
    mp.setattr("enclave.sandbox._zygote._wire.send", send)
    mp.setattr("enclave.sandbox._zygote._wire.send_with_fd", send_with_fd)
    try:
        for _ in range(2):
            with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD) as job:
                job.call({"op": "hold", "payload": canary})
    finally:
        mp.undo()
    assert sent == [{"type": t} for t in ("spawn", "reap", "sweep") * 2]


def test_scratch_starts_empty_for_every_job(zygotes: Zygotes, tmp_path: Path) -> None:
    canary, digest = _canary()
    with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD) as job1:
        job1.call({"op": "hold", "payload": canary})
    with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD) as job2:
        assert job2.call({"op": "list"}) == {"entries": []}
    assert len(_zygote_pids(zygotes)) == 1


def test_two_workers_of_one_sandbox_come_from_different_zygotes(
    zygotes: Zygotes, tmp_path: Path
) -> None:
    """A batch's repeat worker must differ from its first as a fresh start does."""
    sandbox = _sandbox(tmp_path)
    with sandbox.start(HANDLER, preload=PRELOAD):
        first = set(_zygote_pids(zygotes))
    with sandbox.start(HANDLER, preload=PRELOAD):
        both = set(_zygote_pids(zygotes))
    assert len(first) == 1 and len(both) == 2
    with sandbox.start(HANDLER, preload=PRELOAD) as third:  # both used: a fresh worker
        assert set(_zygote_pids(zygotes)) == both
        assert not any(third.pid in _tree(z) for z in both)


def test_candidate_code_has_zygotes_of_its_own_file(zygotes: Zygotes, tmp_path: Path) -> None:
    """A zygote binds the candidate's file as it is when the zygote starts: sandboxes
    of the same file share it; a file renamed over it, or edited, is another start."""
    code = tmp_path / "candidate.py"
    code.write_text("X = 1\n", encoding="utf-8")

    def served() -> set[int]:
        sandbox = Sandbox(scratch_root=tmp_path / "scratch", isolation="bwrap", code=(str(code),))
        with sandbox.start("tests.agents.hostile_agents:echo") as worker:
            assert worker.call({"a": 1}) == {"echo": {"a": 1}}
        return set(_zygote_pids(zygotes))

    first = served()
    assert len(first) == 1 and served() == first  # the same file: the same zygote
    replacement = tmp_path / "replacement.py"
    replacement.write_text("X = 2\n", encoding="utf-8")
    os.replace(replacement, code)
    renamed = served()
    assert len(renamed) == 2 and first < renamed
    time.sleep(0.01)  # a later change time, however coarse the clock
    with code.open("a", encoding="utf-8") as fh:
        fh.write("Y = 3\n")
    assert len(served()) == 3


def test_a_killed_zygote_fails_its_job_as_a_killed_worker_and_is_replaced(
    zygotes: Zygotes, tmp_path: Path
) -> None:
    sandbox = _sandbox(tmp_path)
    worker = sandbox.start("tests.agents.hostile_agents:sleep_forever")
    (zygote,) = _zygote_pids(zygotes)
    os.kill(zygote, signal.SIGKILL)
    with pytest.raises(Contaminated) as info:
        worker.call({}, timeout=20.0)
    # as test_sandbox's killed fresh worker: worker_crashed, SIGKILL
    assert (info.value.reason, info.value.detail) == ("worker_crashed", "SIGKILL")
    worker.close()
    with _sandbox(tmp_path).start("tests.agents.hostile_agents:echo") as again:
        assert again.call({"b": 2}) == {"echo": {"b": 2}}
    assert zygote not in _zygote_pids(zygotes)


def test_a_zygote_that_died_idle_is_replaced(zygotes: Zygotes, tmp_path: Path) -> None:
    with _sandbox(tmp_path).start("tests.agents.hostile_agents:echo") as worker:
        worker.call({})
    (zygote,) = _zygote_pids(zygotes)
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{zygote}/stat").read_text()
        except FileNotFoundError:
            break  # already reaped
        if re.search(r"\) Z ", stat):
            break
        time.sleep(0.01)
    with _sandbox(tmp_path).start("tests.agents.hostile_agents:echo") as worker:
        assert worker.call({"c": 3}) == {"echo": {"c": 3}}
    assert zygote not in _zygote_pids(zygotes)


def test_a_contaminated_job_leaves_the_zygote_usable(zygotes: Zygotes, tmp_path: Path) -> None:
    with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD) as worker:
        with pytest.raises(Contaminated) as info:
            worker.call({"op": "sleep"}, timeout=0.5)
    assert info.value.reason == "wall_clock_timeout"
    (zygote,) = _zygote_pids(zygotes)
    assert _tree(zygote) == [zygote]  # nothing of the job is left below it
    with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD) as worker:
        assert worker.call({"op": "list"}) == {"entries": []}
    assert _zygote_pids(zygotes) == [zygote]


def test_a_job_worker_from_a_zygote_is_checked_like_a_fresh_one(
    zygotes: Zygotes, tmp_path: Path
) -> None:
    fresh = _sandbox(tmp_path)
    with fresh.start(HANDLER, preload=PRELOAD):
        forked = fresh.environment
    Zygotes().close()
    plain = _sandbox(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        # white-box: no zygotes are active for this start (a target, not an import)
        mp.setattr("enclave.sandbox._zygote.active", lambda: None)
        with plain.start(HANDLER, preload=PRELOAD):
            started = plain.environment
    assert forked["verified"] is True
    assert forked["layers_in_force"] == started["layers_in_force"]
    assert forked["rlimits"] == started["rlimits"]
    assert forked["process_environment"] == started["process_environment"]


def _tree(pid: int) -> list[int]:
    found, pending = [pid], [pid]
    while pending:
        parent = pending.pop()
        for tid in os.listdir(f"/proc/{parent}/task"):
            with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as fh:
                children = [int(c) for c in fh.read().split()]
            found += children
            pending += children
    return found


def test_a_worker_starts_the_replay_stages_zygotes_before_its_first_claim(tmp_path: Path) -> None:
    """The zygotes a worker thread starts ahead are the ones the stages' sandbox uses."""
    if shutil.which("bwrap") is None and not IN_CI:
        pytest.skip("bwrap is not installed")
    from enclave.jobs import prewarm as _prewarm
    from enclave.replay import stages

    class _Home:
        root = tmp_path

    class _Runtime:
        home = _Home()

    pool = Zygotes()
    try:
        _prewarm(pool, _Runtime(), _execute_options())  # type: ignore[arg-type]
        assert len(_zygote_pids(pool)) == 2
        with pool.activated():
            sandbox = stages.stage_sandbox(_Runtime(), "auto", None)  # type: ignore[arg-type]
            with sandbox.start(stages.WORKER_HANDLER, preload=stages.WORKER_PRELOAD):
                assert len(_zygote_pids(pool)) == 2  # no zygote started for the job
    finally:
        pool.close()


def _execute_options() -> object:
    from enclave.jobs import StageOptions

    return StageOptions()


def _list_in_a_thread(zygotes: Zygotes, sandbox: Sandbox) -> tuple[Any, int | None]:
    """Start a worker of ``sandbox`` in a thread of its own (as a shard is), list its
    scratch; the reply and the zygote it was forked from (``None``: a fresh start)."""
    found: list[Any] = []

    def shard() -> None:
        with sandbox.start(HANDLER, preload=PRELOAD) as worker:
            found.append(worker.call({"op": "list"}))
            found.append(next((z for z in _zygote_pids(zygotes) if worker.pid in _tree(z)), None))

    # in the caller's context, as ``in_parallel`` runs a shard: the pool is active there
    thread = threading.Thread(target=contextvars.copy_context().run, args=(shard,))
    thread.start()
    thread.join()
    return found[0], found[1]


def test_shards_fork_from_zygotes_their_threads_did_not_start(
    zygotes: Zygotes, tmp_path: Path
) -> None:
    """A zygote ends with the thread that launched it (bubblewrap's --die-with-parent
    follows the thread): started by a shard's thread, it would be gone for the next
    audit's shards. The pool's own thread starts them (``warm``); shards only fork."""
    sandbox = _sandbox(tmp_path)
    assert _list_in_a_thread(zygotes, sandbox) == ({"entries": []}, None)  # a fresh start
    assert _zygote_pids(zygotes) == []
    sandbox.warm(HANDLER, preload=PRELOAD, count=2)
    started = set(_zygote_pids(zygotes))
    assert len(started) == 2
    for _ in range(2):  # another batch: the same zygotes, alive after the threads ended
        again = _sandbox(tmp_path)
        first = _list_in_a_thread(zygotes, again)[1]
        second = _list_in_a_thread(zygotes, again)[1]
        assert {first, second} == started
        assert set(_zygote_pids(zygotes)) == started


def test_pooled_keeps_an_active_pool_and_closes_its_own(zygotes: Zygotes, tmp_path: Path) -> None:
    with pooled() as same:
        assert same is zygotes
    seen: list[int] = []

    def elsewhere() -> None:  # a new thread starts with no pool active
        with pooled() as own:
            with _sandbox(tmp_path).start(HANDLER, preload=PRELOAD):
                seen.extend(_zygote_pids(own))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert len(seen) == 1  # the block's own pool served it ...
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in seen)  # ... and was closed with it
