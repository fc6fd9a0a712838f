"""The trusted side: start one isolated worker per replay job.

Invariant: the worker is reached through one inherited ``socketpair`` end only;
it gets no other descriptor, an environment without the supervisor's variables
(no credentials), and /dev/null for its standard streams (its output could hold
payload). Talking to it afterwards is :class:`WorkerHandle`'s job.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

import enclave
from enclave.sandbox import _isolation, _seccomp
from enclave.sandbox._errors import SandboxUnavailable
from enclave.sandbox._handle import WorkerHandle
from enclave.sandbox._limits import SandboxLimits

_BOOT = (
    "import sys;sys.path[:0]=__import__('json').loads(sys.argv[2]);"
    "from enclave.sandbox._worker import main;main(sys.argv)"
)


def _repo_root() -> str:
    return str(Path(enclave.__file__).resolve().parent.parent)


class Sandbox:
    """Factory of isolated workers; one :class:`WorkerHandle` per replay job."""

    def __init__(
        self,
        *,
        scratch_root: Path,
        limits: SandboxLimits | None = None,
        isolation: str = "auto",
        python_path: list[str] | None = None,
    ) -> None:
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
        self._seccomp = _seccomp.supported()

    @property
    def limits(self) -> SandboxLimits:
        return self._limits

    @property
    def environment(self) -> dict[str, Any]:
        """Which protective layers every worker of this sandbox runs under."""
        layer = self._layer
        return {
            "isolation": layer.name,
            "network_namespace": layer.network_namespace,
            "pid_namespace": layer.pid_namespace,
            "filesystem_readonly": layer.filesystem_readonly,
            "audit_hook": True,
            "seccomp": self._seccomp,
            "rlimits": {
                "RLIMIT_AS": self._limits.memory_bytes,
                "RLIMIT_CPU": self._limits.cpu_seconds,
                "RLIMIT_FSIZE": self._limits.file_size_bytes,
                "RLIMIT_NOFILE": self._limits.open_files,
                "RLIMIT_CORE": 0,
            },
            "wall_clock_kill": True,
            "wall_seconds": float(self._limits.wall_seconds),
        }

    def start(self, handler: str, *, preload: tuple[str, ...] = ()) -> WorkerHandle:
        """Start a worker running ``handler`` ("package.module:function").

        ``preload`` names trusted project modules imported *before* the tripwire is
        armed (their imports may use machinery the tripwire forbids, e.g. asyncio
        rewriting ``__code__``); agent code must never be listed here.
        """
        module, sep, attr = handler.partition(":")
        if not sep or not module or not attr:
            raise ValueError("handler must look like 'package.module:function'")
        scratch = tempfile.mkdtemp(prefix="worker-", dir=self._scratch_root)
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            config = {
                "fd": child_sock.fileno(),
                "scratch": scratch,
                "limits": self._limits.to_dict(),
                "handler": handler,
                "preload": list(preload),
                "seccomp": self._seccomp,
            }
            argv = [
                sys.executable,
                "-I",
                "-B",
                "-c",
                _BOOT,
                orjson.dumps(config).decode(),
                orjson.dumps(self._python_path).decode(),
            ]
            wrapped = self._layer.wrap(
                argv, scratch=scratch, readable=[sys.prefix, *self._python_path]
            )
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": scratch, "TMPDIR": scratch}
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
        handle = WorkerHandle(
            process=process,
            sock=parent_sock,
            scratch=Path(scratch),
            limits=self._limits,
            environment=self.environment,
        )
        handle._await_start()
        return handle
