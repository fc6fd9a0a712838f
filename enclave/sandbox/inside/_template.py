"""The worker's template process and its runs: agent code runs only in a fresh fork.

The template is the worker's first process. It imports trusted project modules only,
holds what the supervisor sent, and never runs agent code. ``Template.run(fn)`` runs
``fn`` — trusted code that may import and call agent code — in a child forked from the
template, and returns the dict the child sent back. Invariants:

1. **Every run starts from the template's state.** Module state, memo caches, counters,
   class attributes and ``lru_cache`` entries an earlier run set died with its process.
2. **A run is sealed before agent code.** The child closes the supervisor's socket
   (only the template answers the supervisor), loads the ordinary seccomp filter on top
   of the template's (no process creation at all: filters stack, the strictest wins) and
   arms the audit-hook tripwire, reporting to the template.
3. **What a run sends is untrusted**: one bounded frame, either a reply with a dict body
   or a contamination whose reason and detail come from the known sets; anything else
   is a protocol violation (``worker_crashed``).
4. **A run's abnormal end is the worker's**: the template forwards the checked
   contamination frame, or ends with the run's exit status (128 + signal after a
   signal), so the supervisor reads it exactly as it read a worker's death.
5. **Nothing written survives a run**: scratch is the only place a run can write
   (bubblewrap's read-only view, Landlock), and the template empties it before the
   first run and after each, resets its own mode and times, and checks both.
6. **Asks are relayed, never answered here**: a run may send ``ask`` frames before its
   reply (``_ask``); the template forwards each to the supervisor with the tag the
   trusted caller gave ``run`` and passes the supervisor's answer back. A run with no
   tag may not ask (protocol violation).
7. **Compiled once, at load**: a run of the load step reports the modules it imported,
   and the template compiles their sources for the runs after it (``_codecache``:
   compiling runs no code). Later runs' imports are not learnt: which modules a run
   imported would otherwise decide how every run after it loads them.
8. **The CPU budget is the job's**: a child's RLIMIT_CPU count restarts at fork, so the
   template adds up its runs' CPU time after each and, past the budget, ends with the
   status of SIGXCPU (``cpu_limit``), as a worker that ran them all would have.
"""

from __future__ import annotations

import gc
import os
import resource
import signal
import socket
import stat
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from enclave.sandbox import _wire
from enclave.sandbox._wire import (
    EXIT_CODES,
    HANDLER_ERROR,
    WORKER_CRASHED,
)
from enclave.sandbox.inside import _ask, _tripwire
from enclave.sandbox.inside._channel import Channel
from enclave.sandbox.inside._codecache import MAX_MODULES, CodeCache

#: Recorded in the environment: how a run's starting state is made.
RUN_STATE = "fork-per-run"
Run = Callable[[], dict[str, Any]]
_REPORTABLE = frozenset(EXIT_CODES)
_DETAILS = frozenset({"MemoryError", "start-up failed", "protocol violation"})
_NAME_BYTES = 256
# what every run finds as the scratch directory's own mode and times
SCRATCH_MODE = stat.S_IRWXU
SCRATCH_TIME_NS = 946_684_800 * 10**9  # 2000-01-01T00:00:00Z


class Template:
    def __init__(
        self,
        *,
        supervisor: Channel,
        scratch: str,
        seal: Callable[[], bool] | None,
        cpu_seconds: int,
    ) -> None:
        self._supervisor = supervisor
        self._scratch = scratch
        self._seal = seal  # None: no seccomp filter here, so none to narrow
        self._cpu_seconds = cpu_seconds
        self._code = CodeCache()
        try:  # the first run finds scratch as every later one does
            empty_scratch(scratch)
        except (OSError, RecursionError):
            supervisor.fail(WORKER_CRASHED, "start-up failed")

    def run(
        self, fn: Run, tag: dict[str, Any] | None = None, *, learn: bool = False
    ) -> dict[str, Any]:
        """Run ``fn`` in a fresh child; its reply, or the worker ends as the child did.
        ``tag`` (from trusted code: the run's seed and arm) goes with each of the run's
        asks to the supervisor; without it the run may not ask. ``learn``: a run of the
        load step, whose imports the template compiles for the runs after it."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        gc.freeze()  # the template's objects stay shared: a run's collector skips them
        # only a learning run lists what it imported: walking every module name in a
        # run would copy the pages those names live on, in every run
        imported = frozenset(sys.modules) if learn else None
        pid = os.fork()
        if pid == 0:
            ours.close()
            self._child(fn, theirs, imported)
        theirs.close()
        try:
            message: dict[str, Any] | None = self._relay_asks(ours, tag)
        except _wire.PeerClosed:
            message = None
        except (_wire.FrameError, OSError):
            self._supervisor.fail(WORKER_CRASHED, "protocol violation")
        finally:
            ours.close()
        if message is not None and message.get("type") == "contaminated":
            reason, detail = _checked_contamination(message)
            self._supervisor.send({"type": "contaminated", "reason": reason, "detail": detail})
            _reap(pid)
            os._exit(EXIT_CODES[reason])
        status = _reap(pid)
        if status != 0 or message is None:
            os._exit(128 - status if status < 0 else status)  # the run's end is ours
        body = message.get("body")
        if message.get("type") != "reply" or len(message) != 3 or not isinstance(body, dict):
            self._supervisor.fail(WORKER_CRASHED, "protocol violation")
        self._clean()
        if learn:  # never from a sample's run: what it imports would mark later runs
            self._code.learn(message.get("modules"))
        return body

    def _relay_asks(self, ours: socket.socket, tag: dict[str, Any] | None) -> dict[str, Any]:
        """The run's first frame that is not an ask; each ask before it relayed."""
        while True:
            message = _wire.recv(ours)
            if message.get("type") != "ask":
                return message
            body = message.get("body")
            if tag is None or len(message) != 2 or not isinstance(body, dict):
                self._supervisor.fail(WORKER_CRASHED, "protocol violation")
            with self._supervisor.lock:
                self._supervisor.sock.sendall(
                    _wire.encode({"type": "ask", "tag": tag, "body": body})
                )
                answer = _wire.recv(self._supervisor.sock)  # the supervisor: trusted
            if answer.get("type") != "answer" or not isinstance(answer.get("body"), dict):
                self._supervisor.fail(WORKER_CRASHED, "protocol violation")
            ours.sendall(_wire.encode({"type": "answer", "body": answer["body"]}))

    def _clean(self) -> None:
        try:
            empty_scratch(self._scratch)
        except (OSError, RecursionError):
            self._supervisor.fail(WORKER_CRASHED, "protocol violation")
        spent = sum(
            usage.ru_utime + usage.ru_stime
            for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        )
        if spent >= self._cpu_seconds:
            os._exit(128 + signal.SIGXCPU)

    def _child(self, fn: Run, sock: socket.socket, imported: frozenset[str] | None) -> NoReturn:
        try:
            os.close(self._supervisor.sock.fileno())
            if self._seal is not None and not self._seal():
                raise OSError("filter not loaded")
            channel = Channel(sock)
            _ask.adopt(channel)
            _tripwire.arm(scratch=self._scratch, report_fd=sock.fileno(), send_lock=channel.lock)
        except BaseException:  # noqa: BLE001 - not sealed: no agent code may run
            os._exit(EXIT_CODES[WORKER_CRASHED])

        def frame(result: dict[str, Any]) -> dict[str, Any]:
            new = [] if imported is None else [n for n in sys.modules if n not in imported]
            return {"type": "reply", "body": result, "modules": new[:MAX_MODULES]}

        channel.reply(fn, frame)
        os._exit(0)


def _checked_contamination(message: dict[str, Any]) -> tuple[str, Any]:
    """A run's contamination frame, kept only if every part is from the known sets."""
    reason, detail = message.get("reason"), message.get("detail")
    if len(message) != 3 or reason not in _REPORTABLE:
        return WORKER_CRASHED, "protocol violation"
    if reason == HANDLER_ERROR:
        if (
            isinstance(detail, list)
            and len(detail) == 2
            and all(isinstance(p, str) and len(p) <= _NAME_BYTES for p in detail)
        ):
            return reason, [str(detail[0]), str(detail[1])]
        return WORKER_CRASHED, "protocol violation"
    if isinstance(detail, str) and (detail in _tripwire.KNOWN_EVENTS or detail in _DETAILS):
        return str(reason), str(detail)
    return WORKER_CRASHED, "protocol violation"


def _reap(pid: int) -> int:
    """Wait for the run to end; its exit status (negative: killed by that signal)."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def empty_scratch(scratch: str) -> None:
    """Empty ``scratch`` and reset its own metadata, and check both (OSError if not): a
    run finds it as every run does, whatever the run before it left in its timestamps
    or mode. (Its change time is the reset's: that is the clock, not a mark.)"""
    _empty(scratch)
    if os.listdir(scratch):
        raise OSError("scratch not empty")
    os.chmod(scratch, SCRATCH_MODE)
    os.utime(scratch, ns=(SCRATCH_TIME_NS, SCRATCH_TIME_NS))
    found = os.stat(scratch)
    if (found.st_mode & 0o7777, found.st_atime_ns, found.st_mtime_ns) != (
        SCRATCH_MODE,
        SCRATCH_TIME_NS,
        SCRATCH_TIME_NS,
    ):
        raise OSError("scratch not reset")


def _empty(directory: str) -> None:
    """Remove everything below ``directory`` without following links, opening up
    directories a run made unreadable first."""
    os.chmod(directory, stat.S_IRWXU)
    with os.scandir(directory) as entries:
        found = [(entry.path, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for path, is_dir in found:
        if is_dir:
            _empty(path)
            os.rmdir(path)
        else:
            os.unlink(path)
