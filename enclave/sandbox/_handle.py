"""A handle on one live worker: calls, verdicts, and the worker's death.

Invariants:

1. Everything read from the worker is untrusted: frames are bounded, parsed as
   JSON, and checked field by field; reason codes and details outside the known
   sets are reported as ``worker_crashed`` (never echoed).
2. Every ``call`` has a wall-clock deadline; at the deadline the supervisor kills
   the worker's whole process tree (and with bubblewrap, its pid namespace).
3. The first contamination ends the worker; the handle then refuses calls.
4. A worker that dies or misreports before ``ready`` was never isolated as
   launched: that is :class:`SandboxUnavailable` (the audit is refused), not a
   verdict on agent code, which has not run yet.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import orjson

from enclave.sandbox import _checks, _wire
from enclave.sandbox._errors import AskRefused, Contaminated, SandboxUnavailable, WorkerClosed
from enclave.sandbox._wire import (
    CPU_LIMIT,
    FILE_SIZE_LIMIT,
    FORBIDDEN_OPERATION,
    HANDLER_ERROR,
    MEMORY_LIMIT,
    NETWORK,
    REASON_BY_EXIT_CODE,
    WALL_CLOCK_TIMEOUT,
    WORKER_CRASHED,
    SandboxLimits,
)
from enclave.sandbox.inside import KNOWN_EVENTS
from ledger import raise_unchained

_WORKER_REPORTABLE = frozenset(
    {
        "network",
        "process_spawn",
        "write_outside_scratch",
        "native_code",
        "forbidden_operation",
        MEMORY_LIMIT,
        HANDLER_ERROR,
        WORKER_CRASHED,
    }
)
_WORKER_DETAILS = frozenset({"protocol violation", "start-up failed", "MemoryError"})
_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)
_REAP_SECONDS = 5.0
# how long a worker that failed the checks may take to be seen ended with its report
_ENDED_SECONDS = 0.5
ASK_REFUSED = "ask refused"
#: answers a run's ask: (the run's tag from the template, the ask's body) -> answer body
Ask = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


class WorkerHandle:
    """One live worker. Not for concurrent use from several threads."""

    def __init__(
        self,
        *,
        process: Process,
        sock: socket.socket,
        scratch: Path,
        limits: SandboxLimits,
        launch: _checks.Launch,
        environ: dict[str, str] | None = None,
    ) -> None:
        self._process = process
        self._environ = dict(environ or {})
        self._sock = sock
        self._scratch = scratch
        self._limits = limits
        self._launch = launch
        self._environment = launch.planned()
        self._lock = threading.Lock()
        self._next_id = 0
        self._killed_by_us = False
        self._contamination: Contaminated | None = None
        self._closed = False
        self._status: int | None = None
        self._cpu_seconds = 0.0

    # -- public -----------------------------------------------------------------

    @property
    def environment(self) -> dict[str, Any]:
        return dict(self._environment)

    @property
    def pid(self) -> int:
        """Host pid of the worker's outermost process (its process-group leader)."""
        return self._process.pid

    @property
    def scratch(self) -> Path:
        """The host directory behind the worker's scratch (under bubblewrap the worker
        writes to a private tmpfs instead, and this directory stays empty)."""
        return self._scratch

    def call(
        self,
        request: dict[str, Any],
        *,
        timeout: float | None = None,
        on_ask: Ask | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the handler's reply.

        A run may ask, before the reply, for what its record does not hold (an ``ask``
        frame with the tag of the run that asked, relayed by the template): ``on_ask(tag,
        body)`` answers it, or raises ``AskRefused`` and the worker is contaminated
        (``network``: as a live call); anything else it raises ends the worker and
        propagates. Without ``on_ask`` every ask is refused.

        Raises :class:`Contaminated` if the worker tripped, died, broke a limit or
        ran past ``timeout`` (default: ``limits.wall_seconds``).
        """
        if not isinstance(request, dict):
            raise TypeError("request must be a dict")
        with self._lock:
            if self._closed or self._contamination is not None:
                raise WorkerClosed("worker handle is closed or contaminated")
            self._next_id += 1
            call_id = self._next_id
            try:
                frame = _wire.encode({"type": "call", "id": call_id, "body": request})
            except orjson.JSONEncodeError as exc:
                raise TypeError("request is not JSON-serializable") from exc
            wall = self._limits.wall_seconds if timeout is None else timeout
            deadline = time.monotonic() + wall
            try:
                self._sock.settimeout(wall)
                self._sock.sendall(frame)
                message = _wire.recv(self._sock, deadline=deadline)
                while message.get("type") == "ask":
                    answer = self._answer(message, on_ask)
                    self._sock.sendall(_wire.encode({"type": "answer", "body": answer}))
                    message = _wire.recv(self._sock, deadline=deadline)
            except (_wire.FrameTimeout, TimeoutError):
                raise self._contaminate(WALL_CLOCK_TIMEOUT, "wall clock") from None
            except _wire.PeerClosed:
                raise self._died() from None
            except _wire.FrameError:  # it may hold what replayed code sent
                raise_unchained(self._contaminate(WORKER_CRASHED, "protocol violation"))
            except OSError:
                raise self._died() from None
            if (
                message.get("type") == "reply"
                and message.get("id") == call_id
                and isinstance(message.get("body"), dict)
                and len(message) == 3
            ):
                body: dict[str, Any] = message["body"]
                return body
            raise self._from_message(message) from None

    def _answer(self, message: dict[str, Any], on_ask: Ask | None) -> dict[str, Any]:
        tag, body = message.get("tag"), message.get("body")
        if len(message) != 3 or not isinstance(tag, dict) or not isinstance(body, dict):
            raise_unchained(self._contaminate(WORKER_CRASHED, "protocol violation"))
        if on_ask is None:
            raise_unchained(self._contaminate(NETWORK, ASK_REFUSED))
        try:
            return on_ask(tag, body)
        except AskRefused:
            raise_unchained(self._contaminate(NETWORK, ASK_REFUSED))
        except BaseException:
            self._kill()
            self._reap(wait=_REAP_SECONDS)
            raise

    def close(self) -> None:
        """End the worker, kill its process group, remove its scratch directory."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._kill()
            self._reap()
            with contextlib.suppress(OSError):
                self._sock.close()
            self._process.release()

    def __enter__(self) -> WorkerHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- start-up -----------------------------------------------------------------

    def _await_start(self) -> None:
        deadline = time.monotonic() + self._limits.wall_seconds
        launcher = "bubblewrap" if self._launch.layer.launcher else "the worker"
        try:
            try:
                message = _wire.recv(self._sock, deadline=deadline)
            except (_wire.FrameError, OSError):
                raise SandboxUnavailable(f"{launcher} could not start the worker") from None
            if message.get("type") != "ready":
                raise SandboxUnavailable(f"{launcher} could not start the worker")
            try:
                self._environment = _checks.verify(
                    self._launch,
                    launcher_pid=self._process.launcher_pid,
                    worker_pid=self._process.worker_pid,
                    ready=message,
                    environ=self._environ,
                )
            except SandboxUnavailable as refused:
                raise self._ended_before_checked(refused) from None
            try:
                message = _wire.recv(self._sock, deadline=deadline)
            except _wire.FrameTimeout:
                raise self._contaminate(WALL_CLOCK_TIMEOUT, "wall clock") from None
            except (_wire.PeerClosed, OSError):
                raise self._died() from None
            except _wire.FrameError:  # it may hold what replayed code sent
                raise_unchained(self._contaminate(WORKER_CRASHED, "protocol violation"))
            if message.get("type") != "loaded":
                raise self._from_message(message)
        except BaseException:
            self.close()
            raise

    def _ended_before_checked(self, refused: SandboxUnavailable) -> Exception:
        """A worker whose checks could not read it: when it has already ended after
        reporting why (its handler failed to load: a loaded machine let it finish
        before the checks ran), its own report; else the refusal. Either way nothing
        runs, and no environment record is issued."""
        deadline = time.monotonic() + _ENDED_SECONDS
        while (ended := self._process.poll()) is None:
            if time.monotonic() >= deadline:
                return refused
            time.sleep(0.005)
        self._status, self._cpu_seconds = ended
        try:
            message = _wire.recv(self._sock, deadline=time.monotonic() + _ENDED_SECONDS)
        except (_wire.FrameError, OSError):
            return refused
        return self._from_message(message) if message.get("type") == "contaminated" else refused

    # -- outcomes -------------------------------------------------------------------

    def _from_message(self, message: dict[str, Any]) -> Contaminated:
        """Turn an unexpected frame into a Contaminated, trusting nothing in it."""
        if message.get("type") != "contaminated":
            return self._contaminate(WORKER_CRASHED, "protocol violation")
        reason, detail = message.get("reason"), message.get("detail")
        if reason not in _WORKER_REPORTABLE:
            return self._contaminate(WORKER_CRASHED, "protocol violation")
        if reason == HANDLER_ERROR:
            return self._contaminate(HANDLER_ERROR, _exception_detail(detail))
        if isinstance(detail, str) and (detail in KNOWN_EVENTS or detail in _WORKER_DETAILS):
            return self._contaminate(str(reason), detail)
        return self._contaminate(WORKER_CRASHED, "protocol violation")

    def _died(self) -> Contaminated:
        """The stream ended without a verdict: read one from the exit status."""
        self._reap(wait=_REAP_SECONDS)
        status = self._status
        if status is None:
            return self._contaminate(WORKER_CRASHED, "no exit status")
        signum = -status if status < 0 else (status - 128 if status > 128 else 0)
        if signum:
            return self._contaminate(*self._signal_reason(signum))
        reason = REASON_BY_EXIT_CODE.get(status)
        if reason is not None:
            return self._contaminate(reason, "exit status")
        return self._contaminate(WORKER_CRASHED, "exit status")

    def _signal_reason(self, signum: int) -> tuple[str, str]:
        name = _signal_name(signum)
        if signum == signal.SIGXCPU:
            return CPU_LIMIT, name
        if signum == signal.SIGXFSZ:
            return FILE_SIZE_LIMIT, name
        if signum == signal.SIGSYS:
            return FORBIDDEN_OPERATION, "seccomp"
        if signum == signal.SIGKILL and self._cpu_seconds >= self._limits.cpu_seconds:
            return CPU_LIMIT, name
        return WORKER_CRASHED, name

    def _contaminate(self, reason: str, detail: str) -> Contaminated:
        error = Contaminated(reason, detail)
        if self._contamination is None:
            self._contamination = error
        self._kill()
        self._reap(wait=_REAP_SECONDS)
        return error

    # -- process control ------------------------------------------------------------

    def _kill(self) -> None:
        if self._status is None:
            self._process.kill()

    def _reap(self, wait: float = _REAP_SECONDS) -> None:
        if self._status is not None:
            return
        deadline = time.monotonic() + wait
        while True:
            ended = self._process.poll()
            if ended is not None:
                self._status, self._cpu_seconds = ended
                return
            if time.monotonic() >= deadline:
                self._process.kill()
                deadline = time.monotonic() + wait
            time.sleep(0.002)


class Process(Protocol):
    """How a handle controls the process behind it (see ``Launched`` and ``_zygote``)."""

    @property
    def pid(self) -> int:
        """Host pid of the worker's outermost process."""

    @property
    def launcher_pid(self) -> int:
        """Host pid whose only child is the worker (the worker itself without a launcher)."""

    @property
    def worker_pid(self) -> int | None:
        """Host pid of the worker when it is known without asking the launcher."""

    def kill(self) -> None:
        """SIGKILL the worker and every process below it."""

    def poll(self) -> tuple[int, float] | None:
        """``(exit status, CPU seconds)`` once the worker ended (negative: by signal)."""

    def release(self) -> None:
        """After the end: free what the worker held (its scratch, its slot)."""


class Launched:
    """A worker this supervisor started itself, in its own session and scratch."""

    def __init__(self, process: subprocess.Popen[bytes], scratch: Path) -> None:
        self._process = process
        self.scratch = scratch

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def launcher_pid(self) -> int:
        return self._process.pid

    @property
    def worker_pid(self) -> int | None:
        return None

    def kill(self) -> None:
        kill_tree(self._process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    def poll(self) -> tuple[int, float] | None:
        try:
            pid, status, usage = os.wait4(self._process.pid, os.WNOHANG)
        except ChildProcessError:
            return (self._process.returncode if self._process.returncode else -9), 0.0
        if not pid:
            return None
        code = os.waitstatus_to_exitcode(status)
        self._process.returncode = code
        return code, usage.ru_utime + usage.ru_stime

    def release(self) -> None:
        remove_tree(self.scratch)


def kill_tree(pid: int) -> None:
    """SIGKILL every process below ``pid``, by pid (processes in the worker's tree may
    sit in other sessions: bubblewrap's --new-session)."""
    for child in _descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """Host pids below ``pid`` (via /proc/PID/task/TID/children), deepest last."""
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as fh:
                    children = [int(c) for c in fh.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            pending.extend(children)
    return found


def _exception_detail(detail: Any) -> str:
    """Keep an exception class name only if it cannot carry agent data."""
    if isinstance(detail, list) and len(detail) == 2:
        module, name = detail
        if module == "builtins" and name in _BUILTIN_EXCEPTIONS:
            return str(name)
        if module == "enclave.sandbox" and name == "BadReply":
            return "BadReply"
    return "non-builtin exception"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal"


def remove_tree(path: Path) -> None:
    """Remove a scratch tree, including directories the worker made unreadable."""
    if not path.exists():
        return
    for dirpath, dirnames, _ in os.walk(path, followlinks=False):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                with contextlib.suppress(OSError):
                    os.chmod(child, 0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)
