"""Zygotes: sandboxed, pre-imported workers that fork one job's worker at a time.

A fresh worker pays bubblewrap, an interpreter and the trusted imports (a few hundred
milliseconds of CPU) for every job. A zygote pays them once: it is started exactly as
a job's worker (``Sandbox._launch``: the same view, environment, rlimits, Landlock and
template seccomp filter) and checked exactly as one (``_checks``), then stops before
it would take a job. For each job the supervisor hands it a new socket end; it forks a
child that becomes the job's worker (its template, ``_template``) and is checked again
from the host's ``/proc`` as a worker of its own before it gets any job data. The
zygote's side is ``_spawner``.

Invariants:

1. **One view per zygote.** Only a bubblewrap ``Sandbox`` uses a zygote
   (``UNSAFE_development`` has no private scratch); a zygote serves only sandboxes whose
   every start parameter is equal (:meth:`Sandbox.zygote_key`), candidate code included:
   its files as they are when the sandbox is made (path, inode, change time), so code
   replaced or edited since a zygote bound it gets a zygote of its own. (Audits bind a
   copy of a candidate made per digest, and a job's worker hashes it again before any
   run: ``enclave.replay``.) Each job's handle gets a host scratch directory of its own,
   which stays empty (the job writes to the zygote's private tmpfs) and is removed with
   the handle.
2. **No job data in the zygote.** The supervisor sends it ``spawn`` (with a descriptor),
   ``reap`` and ``sweep``, nothing else; it never sees a job's frames.
3. **One job per zygote at a time, and nothing of it afterwards.** When the job's
   worker ended, the supervisor kills every process left below the zygote, and the
   zygote reaps them and empties its scratch before it may fork again (``_spawner``).
   A zygote that misbehaves, stops answering or dies is killed with its whole tree and
   replaced at the next start; a job whose zygote died fails as a worker killed by
   SIGKILL does (the kernel kills a pid namespace with its first process).
4. **A second worker of one sandbox is another process image.** ``Sandbox.start``
   never forks two workers of one ``Sandbox`` from the same zygote (a batch's repeat
   worker must differ from the first as a fresh start does: address layout, start-up
   state); with both of a key's zygotes used, it starts a fresh worker.
5. **Bounded life.** A zygote past half the CPU budget of a worker is retired.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from enclave.sandbox import _checks, _wire
from enclave.sandbox._errors import SandboxUnavailable
from enclave.sandbox._handle import WorkerHandle, kill_tree, remove_tree

if TYPE_CHECKING:
    from enclave.sandbox._supervisor import Sandbox

#: Zygotes kept per start key by a job worker's thread: a batch's first worker and its
#: repeat worker (an embedded audit's pool keeps one more per core: its shards run at once).
PER_KEY = 2
_MAX_KEYS = 4
_SWEEP_SECONDS = 10.0
_KILLED = -int(signal.SIGKILL)
_IDS = itertools.count(1)
_COULD_NOT_START = "bubblewrap could not start the worker"  # as a fresh start says
_ACTIVE: ContextVar[Zygotes | None] = ContextVar("enclave_zygotes", default=None)


def active() -> Zygotes | None:
    """The zygotes ``Sandbox.start`` may fork from in this context, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def pooled() -> Iterator[Zygotes]:
    """The active pool of zygotes, or, where none is active, one for the block, closed
    at its end: an embedded audit's workers (its preparation's, its shards', its
    repeat's) fork from zygotes it starts once, and a caller that runs several audits
    (the demo) activates one pool for all of them."""
    current = _ACTIVE.get()
    if current is not None:
        yield current
        return
    pool = Zygotes(per_key=len(os.sched_getaffinity(0)) + 1)  # the shards and the repeat
    try:
        with pool.activated():
            yield pool
    finally:
        pool.close()


class _Gone(Exception):
    """The zygote did not answer as it must; it has been killed."""


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("inf")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _started(sandbox: Sandbox, handler: str, preload: tuple[str, ...], count: int) -> list[Zygote]:
    """``count`` zygotes, launched one after another (cheap) and then checked (each
    start runs while the ones before it are checked); if one fails, none is kept."""
    launched: list[Zygote] = []
    try:
        for _ in range(count):
            launched.append(Zygote(sandbox, handler, preload))
        for zygote in launched:
            zygote.check()
    except BaseException:
        for zygote in launched:
            zygote.close()
        raise
    return launched


class Zygote:
    """One zygote and the supervisor's end of its socket: launched, then checked (:meth:`check`)
    before it serves. Bubblewrap's ``--die-with-parent`` follows the *thread* that
    launched it: a zygote launched by a thread ends with that thread (``Zygotes``)."""

    def __init__(self, sandbox: Sandbox, handler: str, preload: tuple[str, ...]) -> None:
        self._process, self._sock, self._environ, self._launch = sandbox.launch_zygote(
            handler, preload
        )
        self._limits = self._launch.limits
        self.ident = next(_IDS)
        self.busy = False
        self.dead = False
        self._asked = False
        self._closed = False

    def check(self) -> None:
        """Wait for the zygote's ``ready`` and check it as a fresh worker is checked; a
        zygote that fails is closed and the start's error raised."""
        try:
            deadline = time.monotonic() + self._limits.wall_seconds
            try:
                message = _wire.recv(self._sock, deadline=deadline)
            except (_wire.FrameError, OSError):
                raise SandboxUnavailable(_COULD_NOT_START) from None
            if message.get("type") != "ready":
                raise SandboxUnavailable(_COULD_NOT_START)
            _checks.verify(
                self._launch,
                launcher_pid=self._process.launcher_pid,
                ready=message,
                environ=self._environ,
            )
            self.pid = self._process.launcher_pid
            if self._launch.layer.launcher is not None:
                (self.pid,) = _checks.children(self._process.launcher_pid)
        except BaseException:
            self.close()
            raise

    # -- one job --------------------------------------------------------------------

    def spawn(self) -> WorkerHandle:
        """Fork a job's worker and check it; raises :class:`_Gone` if the zygote failed,
        or what a fresh worker's start raises if the job's worker is not as launched."""
        if self.dead:  # busy: reserved by the pool for this spawn
            raise _Gone()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            _wire.send_with_fd(self._sock, {"type": "spawn"}, theirs.fileno())
            message = _wire.recv(self._sock, deadline=time.monotonic() + self._limits.wall_seconds)
            children = _checks.children(self.pid)
            if message != {"type": "spawned"} or len(children) != 1:
                raise _wire.FrameError("unexpected")
        except (_wire.FrameError, OSError, SandboxUnavailable):
            ours.close()
            self.close()
            raise _Gone() from None
        finally:
            theirs.close()
        self.busy = True
        job = _JobWorker(self, children[0], self._process.scratch.parent)
        handle = WorkerHandle(
            process=job,
            sock=ours,
            scratch=job.scratch,
            limits=self._limits,
            launch=self._launch,
            environ=self._environ,
        )
        handle._await_start()
        return handle

    def reap(self) -> tuple[int, float] | None:
        """The job's worker's exit status and CPU time once it ended (the zygote waits
        for it); a dead zygote took the job's worker with it: SIGKILL."""
        if self.dead:
            return _KILLED, 0.0
        try:
            if not self._asked:
                self._asked = True
                _wire.send(self._sock, {"type": "reap"})
            ready, _, _ = select.select([self._sock], [], [], 0)
            if not ready:
                return None
            message = _wire.recv(self._sock, deadline=time.monotonic() + _SWEEP_SECONDS)
            status, cpu = message.get("status"), message.get("cpu")
            if (
                message.get("type") != "exited"
                or len(message) != 3
                or isinstance(status, bool)
                or not isinstance(status, int)
                or isinstance(cpu, bool)
                or not isinstance(cpu, int | float)
            ):
                raise _wire.FrameError("unexpected")
        except (_wire.FrameError, OSError):
            self.close()
            return _KILLED, 0.0
        return status, float(cpu)

    def sweep(self) -> None:
        """After the job's worker was reaped: kill what it left, have the zygote reap it
        and empty scratch; any failure kills the zygote."""
        try:
            if self.dead:
                return
            kill_tree(self.pid)  # nothing below the zygote can fork any more
            _wire.send(self._sock, {"type": "sweep"})
            message = _wire.recv(self._sock, deadline=time.monotonic() + _SWEEP_SECONDS)
            if message != {"type": "clean"}:
                raise _wire.FrameError("unexpected")
        except (_wire.FrameError, OSError):
            self.close()
        finally:
            self.busy = False
            self._asked = False
        if not self.dead and _cpu_seconds(self.pid) >= self._limits.cpu_seconds / 2:
            self.close()

    def close(self) -> None:
        """Kill the zygote and everything below it; remove its scratch."""
        if self._closed:
            return
        self._closed = self.dead = True
        with contextlib.suppress(OSError):
            self._sock.close()
        self._process.kill()
        deadline = time.monotonic() + 5.0
        while self._process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        self._process.release()


class _JobWorker:
    """The ``Process`` behind a job's handle: a child of a zygote (see ``_handle``)."""

    def __init__(self, zygote: Zygote, pid: int, scratch_root: Path) -> None:
        self._zygote = zygote
        self._pid = pid
        self._released = False
        self.scratch = Path(tempfile.mkdtemp(prefix="worker-", dir=scratch_root))

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def launcher_pid(self) -> int:
        return self._zygote.pid

    @property
    def worker_pid(self) -> int | None:
        return self._pid

    def kill(self) -> None:
        kill_tree(self._pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self._pid, signal.SIGKILL)

    def poll(self) -> tuple[int, float] | None:
        return self._zygote.reap()

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._zygote.sweep()
            remove_tree(self.scratch)


class Zygotes:
    """A pool of zygotes: one thread's in a job worker, or one embedded audit's (and the
    threads of its shards). Inside :meth:`activated`, ``Sandbox.start`` forks its
    workers from them where invariant 1 allows. Threads may share a pool: a zygote is
    handed to one of them at a time (invariant 3), and one busy is never retired."""

    def __init__(self, per_key: int = PER_KEY) -> None:
        self._per_key = per_key
        self._by_key: dict[tuple[Any, ...], list[Zygote]] = {}
        self._lock = threading.Lock()
        # the one thread that starts zygotes: bubblewrap ends a zygote with the thread
        # that launched it, and a shard's thread ends with its shard
        self._owner = threading.get_ident()

    @contextlib.contextmanager
    def activated(self) -> Iterator[Zygotes]:
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def spawn(
        self, sandbox: Sandbox, handler: str, preload: tuple[str, ...]
    ) -> WorkerHandle | None:
        """A job's worker forked from a zygote ``sandbox`` has not used yet, started if
        need be (by the pool's own thread only); ``None`` when no zygote may serve it:
        the key's zygotes served ``sandbox`` already or serve another thread's job, or
        only another thread could start one."""
        key = sandbox.zygote_key(handler, preload)
        for _ in range(self._per_key + 1):
            with self._lock:
                zygote, room = self._reserve(key, sandbox.zygotes_used)
            if zygote is None:
                if not room or threading.get_ident() != self._owner:
                    return None
                (zygote,) = _started(sandbox, handler, preload, 1)
                zygote.busy = True
                with self._lock:
                    self._by_key.setdefault(key, []).append(zygote)
            sandbox.zygotes_used.add(zygote.ident)
            try:
                return zygote.spawn()
            except _Gone:
                with self._lock:
                    self._by_key[key] = [z for z in self._by_key.get(key, []) if z is not zygote]
        return None

    def _reserve(self, key: tuple[Any, ...], used: set[int]) -> tuple[Zygote | None, bool]:
        """An idle zygote of ``key`` not in ``used``, now busy (or ``None``), and whether
        the key has room for another zygote."""
        pool = [z for z in self._by_key.pop(key, []) if not z.dead]
        self._by_key[key] = pool  # most recently used key last
        # past _MAX_KEYS, the least recently used keys go, but none still serving a job
        idle = [k for k in list(self._by_key)[:-1] if not any(z.busy for z in self._by_key[k])]
        for old_key in idle[: max(0, len(self._by_key) - _MAX_KEYS)]:
            for retired in self._by_key.pop(old_key):
                retired.close()
        free = next((z for z in pool if z.ident not in used and not z.busy), None)
        if free is not None:
            free.busy = True
        return free, len(pool) < self._per_key

    def prewarm(
        self,
        sandbox: Sandbox,
        handler: str,
        preload: tuple[str, ...] = (),
        *,
        count: int | None = None,
    ) -> None:
        """Have ``count`` (at most, and by default, the pool's number per key) zygotes
        ready that ``sandbox.start(handler, preload=preload)`` would fork from, started
        at once: a job worker's thread before it claims a job, an embedded batch before
        its shards start (from the pool's own thread; elsewhere nothing is started)."""
        if not sandbox.uses_zygotes or threading.get_ident() != self._owner:
            return
        key = sandbox.zygote_key(handler, preload)
        wanted = self._per_key if count is None else min(count, self._per_key)
        with self._lock:
            missing = wanted - len([z for z in self._by_key.get(key, []) if not z.dead])
        if missing > 0:
            started = _started(sandbox, handler, preload, missing)
            with self._lock:
                self._by_key.setdefault(key, []).extend(started)

    def close(self) -> None:
        with self._lock:
            for pool in self._by_key.values():
                for zygote in pool:
                    zygote.close()
            self._by_key.clear()
