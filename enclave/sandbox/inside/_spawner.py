"""The zygote's side: a started, sealed worker that forks one child per job.

A zygote is a worker (``_worker``) stopped after step 5 of its start-up: rlimits,
trusted imports, Landlock and the template's seccomp filter are in force, its view is
the job-independent one. Its loop serves three requests from the supervisor, one job at
a time, and nothing else. Invariants:

1. **It never holds job data.** ``spawn`` carries no body, only one descriptor (the
   job's own socket end, SCM_RIGHTS), which the zygote hands to the child and closes
   unread. Every byte of a job travels over that socket to the child alone.
2. **It never runs agent code.** The child it forks becomes the job's template
   (``_template``): that child, not the zygote, forks the job's runs.
3. **A job starts from the zygote's state and leaves none behind.** At ``spawn`` the
   scratch is empty and the zygote has no other child; at ``reap`` it waits for the
   job's child and reports its exit status and CPU time (the supervisor classifies them
   as it classifies a worker's death); at ``sweep`` — sent once the supervisor has
   killed every process left below the zygote (in its pid namespace, orphans come to
   it: it is pid 1 there, and a child subreaper elsewhere) — it reaps them all, empties
   scratch and checks that it is empty. A request out of this order ends the zygote.
"""

from __future__ import annotations

import ctypes
import gc
import os
import socket

from enclave.sandbox import _wire
from enclave.sandbox._wire import EXIT_CODES, WORKER_CRASHED
from enclave.sandbox.inside._channel import Channel
from enclave.sandbox.inside._template import empty_scratch

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphans of a job come to the zygote (needed outside a pid namespace; must run
    before the seccomp filter, which refuses this ``prctl``)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    prctl.restype = ctypes.c_int
    return bool(prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def _expect(channel: Channel, kind: str) -> None:
    try:
        message = _wire.recv(channel.sock)
    except _wire.PeerClosed:
        os._exit(0)
    except (_wire.FrameError, OSError):
        channel.fail(WORKER_CRASHED, "protocol violation")
    if message != {"type": kind}:
        channel.fail(WORKER_CRASHED, "protocol violation")


def _reap_all() -> None:
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            return


def serve_spawns(channel: Channel, scratch: str) -> socket.socket:
    """Serve ``spawn``/``reap``/``sweep`` until the supervisor closes the socket (the
    zygote then exits); returns only in a forked child: the job's socket."""
    while True:
        try:
            message, fds = _wire.recv_with_fds(channel.sock)
        except _wire.PeerClosed:
            os._exit(0)
        except (_wire.FrameError, OSError):
            channel.fail(WORKER_CRASHED, "protocol violation")
        if message != {"type": "spawn"} or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            channel.fail(WORKER_CRASHED, "protocol violation")
        gc.freeze()  # the zygote's objects stay shared with the job's processes
        pid = os.fork()
        if pid == 0:
            return _child(channel, fds[0])
        os.close(fds[0])
        channel.send({"type": "spawned"})
        _finish(channel, pid, scratch)


def _child(channel: Channel, fd: int) -> socket.socket:
    try:
        os.close(channel.sock.fileno())  # only the zygote talks on the zygote's socket
        sock = socket.socket(fileno=fd)
        sock.setblocking(True)
    except BaseException:  # noqa: BLE001 - the job's child never started
        os._exit(EXIT_CODES[WORKER_CRASHED])
    return sock


def _finish(channel: Channel, pid: int, scratch: str) -> None:
    _expect(channel, "reap")
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        channel.fail(WORKER_CRASHED, "protocol violation")
    channel.send(
        {
            "type": "exited",
            "status": os.waitstatus_to_exitcode(status),
            "cpu": usage.ru_utime + usage.ru_stime,
        }
    )
    _expect(channel, "sweep")
    _reap_all()
    try:
        empty_scratch(scratch)
    except (OSError, RecursionError):
        channel.fail(WORKER_CRASHED, "protocol violation")
    channel.send({"type": "clean"})
