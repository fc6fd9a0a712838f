"""The trusted side: start one isolated worker per replay job.

Invariants:

1. The worker is reached through one inherited ``socketpair`` end only; it gets no
   other descriptor, the fixed environment of :func:`worker_environment` (nothing of
   the supervisor's: no ``VAULT_*``, ``BAO_*``, ``REPLAY_ENCLAVE_*`` or tokens — keys
   never enter the worker; and the same in every worker, hash seed included, so set
   iteration order is too), and /dev/null for its standard streams (its output could
   hold payload). The interpreter runs with ``-s -P -B`` rather than ``-I``: isolated
   mode would ignore ``PYTHONHASHSEED``; the environment is the supervisor's own.
2. Under bubblewrap the worker sees the minimal view of ``_fsview``; the enclave home
   (the directory holding ``scratch_root``, and ``$REPLAY_ENCLAVE_HOME``) is protected
   in it, and so is any directory carrying the home marker.
3. No worker is handed out before the supervisor has checked it (``_checks``); the
   environment record — what a certificate may claim — comes from that check only.

Talking to a worker afterwards is :class:`WorkerHandle`'s job.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from enclave.sandbox import _fsview, _isolation, _zygote
from enclave.sandbox._checks import Launch
from enclave.sandbox._errors import SandboxUnavailable
from enclave.sandbox._handle import Launched, WorkerHandle
from enclave.sandbox._wire import SandboxLimits
from enclave.sandbox.inside import landlock, seccomp

BOOT = (
    "import sys;sys.path[:0]=__import__('json').loads(sys.argv[2]);"
    "from enclave.sandbox.inside._worker import main;main(sys.argv)"
)


_HOME_ENV = "REPLAY_ENCLAVE_HOME"
#: The hash seed every worker runs with (recorded in the environment).
HASH_SEED = 0


def _file_identity(path: str) -> tuple[str, int, int, int]:
    """Which file (or directory) ``path`` is now, and when it last changed."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return (real, -1, -1, -1)  # gone: binding it fails the start, as it would fresh
    return (real, st.st_dev, st.st_ino, st.st_ctime_ns)


def _pairs(code: tuple[str | tuple[str, str], ...]) -> list[tuple[str, str]]:
    return [(entry, entry) if isinstance(entry, str) else entry for entry in code]


def worker_environment(scratch: str) -> dict[str, str]:
    """The whole process environment of a worker: only what Python and the C library
    read, fixed (``scratch`` is ``/scratch`` under bubblewrap, which sets ``PWD`` to it
    itself)."""
    return {
        "HOME": scratch,
        "LC_ALL": "C.UTF-8",
        "PWD": scratch,
        "PYTHONHASHSEED": str(HASH_SEED),
        "TMPDIR": scratch,
    }


def _repo_root() -> str:
    # the folder that holds the ``enclave`` package (this file is enclave/sandbox/...)
    return str(Path(__file__).resolve().parents[2])


@functools.cache
def _landlock_abi() -> int:
    return landlock.abi()


def _protected(scratch_root: Path, extra: tuple[Path, ...]) -> list[str]:
    """The home around ``scratch_root`` (if it is not a top-level directory), the
    scratch root itself, ``$REPLAY_ENCLAVE_HOME`` and whatever the caller adds."""
    paths = [scratch_root, *extra]
    if len(scratch_root.parent.parts) > 2:
        paths.append(scratch_root.parent)
    if os.environ.get(_HOME_ENV):
        paths.append(Path(os.environ[_HOME_ENV]))
    return [str(Path(p).resolve()) for p in paths]


class Sandbox:
    """Factory of isolated workers; one :class:`WorkerHandle` per replay job."""

    def __init__(
        self,
        *,
        scratch_root: Path,
        limits: SandboxLimits | None = None,
        isolation: str = "auto",
        python_path: list[str] | None = None,
        protect: tuple[Path, ...] = (),
        code: tuple[str | tuple[str, str], ...] = (),
    ) -> None:
        """``code``: a candidate release's module file or package directory, shown to
        the worker read-only (nothing else of its source root) and left off the worker's
        import path: a run that imports it puts its root there itself. An entry is a
        path shown at itself, or ``(copy, path)``: the copy shown at ``path``."""
        self._limits = limits if limits is not None else SandboxLimits()
        if not isinstance(self._limits, SandboxLimits):
            raise TypeError("limits must be a SandboxLimits")
        self._layer = _isolation.resolve(isolation)
        root = Path(scratch_root)
        root.mkdir(parents=True, exist_ok=True)
        self._scratch_root = root.resolve()
        if python_path is None:
            python_path = [_repo_root(), *(p for p in sys.path if p)]
        self._python_path = [str(Path(p).resolve()) for p in python_path]
        pairs = _pairs(code)
        self._view = _fsview.View(binds=(), symlinks=(), masks=())
        if self._layer.enclave:
            self._view = _fsview.plan(
                python_path=self._python_path,
                code=[
                    (str(Path(source).resolve()), str(Path(shown).resolve()))
                    for source, shown in pairs
                ],
                protected=_protected(self._scratch_root, tuple(protect)),
            )
        self._launch_facts = Launch(
            layer=self._layer,
            limits=self._limits,
            seccomp=seccomp.supported(),
            readonly_binds=len(self._view.binds),
            landlock=_landlock_abi(),
        )
        # the files a zygote's view binds: a file replaced or edited since is another
        # start (``zygote_key``); what a worker sees is checked again inside it anyway
        self._code_files = tuple((_file_identity(source), shown) for source, shown in pairs)
        #: Zygotes this sandbox's workers were forked from (``_zygote``, invariant 4).
        self.zygotes_used: set[int] = set()
        self._checked: dict[str, Any] | None = None

    @property
    def limits(self) -> SandboxLimits:
        return self._limits

    @property
    def environment(self) -> dict[str, Any]:
        """What the last worker started here was checked to run under (``_checks``);
        before any worker was checked, the plan with no layer claimed."""
        if self._checked is not None:
            return dict(self._checked)
        return self._launch_facts.planned()

    def start(self, handler: str, *, preload: tuple[str, ...] = ()) -> WorkerHandle:
        """Start a worker running ``handler`` ("package.module:function").

        ``preload`` names trusted project modules the template imports (their imports
        may use machinery the tripwire forbids, e.g. asyncio rewriting ``__code__``);
        agent code must never be listed here. A handler from a preloaded module runs
        in the template as ``handler(request, fresh)`` and must run agent code only
        through ``fresh(fn)`` (a fresh fork per run); any other handler is agent code
        and runs in a fresh fork for every call.
        """
        module, sep, attr = handler.partition(":")
        if not sep or not module or not attr:
            raise ValueError("handler must look like 'package.module:function'")
        zygotes = _zygote.active()
        if zygotes is not None and self.uses_zygotes:
            handle = zygotes.spawn(self, handler, preload)
            if handle is not None:
                self._checked = handle.environment
                return handle
        process, sock, env = self._launch(handler, preload, zygote=False)
        handle = WorkerHandle(
            process=process,
            sock=sock,
            scratch=process.scratch,
            limits=self._limits,
            launch=self._launch_facts,
            environ=env,
        )
        handle._await_start()
        self._checked = handle.environment
        return handle

    def warm(self, handler: str, *, preload: tuple[str, ...] = (), count: int = 1) -> None:
        """Before ``count`` workers start at once from other threads: where a pool of
        zygotes is active (``_zygote.pooled``), have that many ready, started together
        from this thread (a zygote launched by a thread ends with it)."""
        zygotes = _zygote.active()
        if zygotes is not None:
            zygotes.prewarm(self, handler, preload, count=count)

    # -- for zygotes (``_zygote``) ----------------------------------------------------

    @property
    def uses_zygotes(self) -> bool:
        """Whether a zygote may serve this sandbox (``_zygote``, invariant 1)."""
        return self._layer.enclave

    def zygote_key(self, handler: str, preload: tuple[str, ...]) -> tuple[Any, ...]:
        """Everything a worker's start depends on: equal keys, interchangeable zygotes."""
        return (
            handler,
            tuple(preload),
            self._limits,
            self._layer,
            self._scratch_root,
            tuple(self._python_path),
            self._view,
            self._code_files,
            self._launch_facts,
            os.environ.get(_HOME_ENV),
        )

    def launch_zygote(
        self, handler: str, preload: tuple[str, ...]
    ) -> tuple[Launched, socket.socket, dict[str, str], Launch]:
        process, sock, env = self._launch(handler, preload, zygote=True)
        return process, sock, env, self._launch_facts

    def _launch(
        self, handler: str, preload: tuple[str, ...], *, zygote: bool
    ) -> tuple[Launched, socket.socket, dict[str, str]]:
        scratch = tempfile.mkdtemp(prefix="worker-", dir=self._scratch_root)
        inside = _isolation.SCRATCH if self._layer.enclave else scratch
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            config = {
                "fd": child_sock.fileno(),
                "scratch": inside,
                "limits": self._limits.to_dict(),
                "handler": handler,
                "preload": list(preload),
                "seccomp": self._launch_facts.seccomp,
                "zygote": zygote,
            }
            argv = [
                sys.executable,
                "-s",
                "-P",
                "-B",
                "-c",
                BOOT,
                orjson.dumps(config).decode(),
                orjson.dumps(self._python_path).decode(),
            ]
            wrapped = self._layer.wrap(
                argv, view=self._view, scratch_bytes=self._limits.scratch_bytes
            )
            env = worker_environment(inside)
            process = subprocess.Popen(
                wrapped,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(child_sock.fileno(),),
                close_fds=True,
                start_new_session=True,
                env=env,
                cwd=scratch,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            parent_sock.close()
            shutil.rmtree(scratch, ignore_errors=True)
            raise SandboxUnavailable("worker process could not be started") from exc
        finally:
            child_sock.close()
        return Launched(process, Path(scratch)), parent_sock, env
