"""The worker: a template process that runs every call's agent code in a fresh fork.

Start-up of the template, in this order, before any agent code is imported:

1. adopt the inherited socket (the sole channel to the supervisor);
2. chdir into the fresh scratch directory; bytecode writing is off (``-B``);
3. rlimits: address space, CPU, file size, open files, no core files; SIGXFSZ and
   SIGXCPU end the process with status 128 + signal, as their default action would
   — which the kernel does not take for the pid 1 of a namespace, as the worker is
   under bubblewrap (RLIMIT_CPU's hard limit still SIGKILLs it; an oversize write
   still fails);
4. pre-import ctypes (it opens the interpreter's own symbols at import time), probe
   ``platform`` once (``_probe_platform``) and pre-import the supervisor's ``preload``
   list of trusted project modules;
5. confine writes to scratch with Landlock (where the kernel offers it), then load
   the template's seccomp filter (default deny; a plain fork is its one addition) and
   prepare the ordinary filter each run loads on top (see ``_seccomp``); then warm up
   (``_warm_up``): each preloaded project module that defines ``_warm_template()`` builds, once,
   the state its framework would otherwise build lazily in every run;
6. report ``ready`` — the rlimits applied, the kernel's own account of this process
   (uid, gid, effective capabilities, no-new-privs, seccomp mode), the Landlock ABI
   in force, the sha256 of the two filters' bytes as handed to the kernel (the
   template's, loaded; each run's, prepared) and how runs are started — which the
   supervisor checks against what it launched; no agent code has run, so this frame
   comes from trusted code;
7. report ``loaded`` once the handler is ready.

The handler: one from a ``preload`` module is trusted project code and runs here, as
``handler(request, fresh)``, starting agent code only through ``fresh(fn)`` (a fresh
fork per run, ``_template``); any other handler is agent code, imported and called in a
fresh fork for every call (once at start-up, so that a failing import fails the start).

A zygote (``"zygote": true`` in the configuration, see ``_zygote``) becomes a child
subreaper before step 5, reports ``ready`` after it and then serves ``_spawner``'s
loop; each job's child it forks continues here from step 6, reporting its own
``ready`` (read from its own ``/proc/self/status``) over the job's socket.

Then serve ``call`` frames one at a time until the supervisor closes the socket.
A handler exception ends the worker with ``handler_error`` and the exception's
class name only; a MemoryError ends it with ``memory_limit``.
"""

from __future__ import annotations

import functools
import importlib
import os
import platform
import resource
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

import orjson

from enclave.sandbox import _wire
from enclave.sandbox._wire import (
    WORKER_CRASHED,
    SandboxLimits,
)
from enclave.sandbox.inside import _landlock, _seccomp, _spawner
from enclave.sandbox.inside._channel import Channel
from enclave.sandbox.inside._template import RUN_STATE, Template

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def _apply_rlimits(limits: SandboxLimits) -> dict[str, int]:
    wanted = {
        "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
        # The hard limit one second later turns a caught SIGXCPU into SIGKILL.
        "RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + 1),
        "RLIMIT_FSIZE": (limits.file_size_bytes, limits.file_size_bytes),
        "RLIMIT_NOFILE": (limits.open_files, limits.open_files),
        "RLIMIT_CORE": (0, 0),
    }
    applied: dict[str, int] = {}
    for name, (soft, hard) in wanted.items():
        which = getattr(resource, name)
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))
        applied[name] = soft
    return applied


def _end_on_limit(signum: int, frame: object) -> None:
    os._exit(128 + signum)  # read by the supervisor as "killed by signum"


def _identity() -> dict[str, int]:
    """This process as the kernel reports it (``/proc/self/status``)."""
    fields = {"CapEff": "cap_eff", "NoNewPrivs": "no_new_privs", "Seccomp": "seccomp_mode"}
    found = {"uid": os.getuid(), "gid": os.getgid()}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in fields:
                found[fields[key]] = int(value.strip(), 16 if key == "CapEff" else 10)
    return found


def _load_handler(spec: str) -> Callable[..., dict[str, Any]]:
    module_name, _, attr = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError("handler is not callable")
    handler: Callable[..., dict[str, Any]] = target
    return handler


def _serve(channel: Channel, handler: Handler) -> NoReturn:
    while True:
        try:
            message = _wire.recv(channel.sock)
        except _wire.PeerClosed:
            os._exit(0)
        if message.get("type") != "call" or not isinstance(message.get("body"), dict):
            channel.fail(WORKER_CRASHED, "protocol violation")
        channel.reply(
            functools.partial(handler, message["body"]),
            functools.partial(_framed, message.get("id")),
        )


def _framed(call_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"type": "reply", "id": call_id, "body": result}


def _ready(
    seccomp: bool, rlimits: dict[str, int], landlock: int, filters: dict[str, str | None]
) -> dict[str, Any]:
    return {
        "type": "ready",
        "seccomp": seccomp,
        "seccomp_sha256": filters if seccomp else None,
        "rlimits": rlimits,
        "identity": {**_identity(), "landlock": landlock},
        "run_state": RUN_STATE,
        "hash_seed": 0 if sys.flags.hash_randomization == 0 else None,
    }


def _probe_platform() -> None:
    """Ask the ``platform`` module, once, what it caches for the process: the host's
    answers, the same for every run. Agent frameworks' clients stamp them on requests;
    asked first inside a run, the probe would start ``uname -p`` (a process no run may
    start) and read ``/etc/os-release`` and the interpreter's binary."""
    platform.platform()
    platform.uname().processor  # noqa: B018 - a cached property: computed here, once
    try:
        platform.freedesktop_os_release()
    except OSError:
        pass  # no os-release here: nothing to cache, nothing a run could read either


def _warm_up(preload: tuple[str, ...]) -> None:
    """Call ``_warm_template()`` of each preloaded project module that has one, in order.

    A warm-up is trusted project code, sealed like the template, that runs no agent code
    (none is imported yet) and exercises installed framework code only: imports it defers
    to first use, schemas and validators it builds on first use, an event loop made and
    closed. Every run forks from the state it leaves, so it gives every run, whatever its
    seed or arm, the same start. It must leave no thread behind (a fork copies only the
    forking thread): one left running fails the start."""
    for module_name in preload:
        if module_name.partition(".")[0] != "enclave":
            continue  # an installed package's attributes are not our hooks
        warm = getattr(sys.modules[module_name], "_warm_template", None)
        if callable(warm):
            warm()
    if threading.active_count() != 1:
        raise RuntimeError("a warm-up left a thread running")


def main(argv: list[str]) -> NoReturn:
    config = orjson.loads(argv[1])
    sock = socket.socket(fileno=int(config["fd"]))
    sock.setblocking(True)
    channel = Channel(sock)
    zygote = config.get("zygote") is True
    try:
        scratch = str(config["scratch"])
        os.chdir(scratch)
        limits = SandboxLimits.from_dict(config["limits"])
        rlimits = _apply_rlimits(limits)
        for limit_signal in (signal.SIGXFSZ, signal.SIGXCPU):
            signal.signal(limit_signal, _end_on_limit)
        import ctypes  # noqa: F401  - see step 4 in the module docstring

        _probe_platform()

        preload = tuple(str(name) for name in config.get("preload", ()))
        for module_name in preload:
            importlib.import_module(module_name)  # trusted project code only
        spec = str(config["handler"])
        trusted = spec.partition(":")[0] in preload
        if zygote and not _spawner.become_subreaper():
            raise OSError("no subreaper")

        landlock = _landlock.restrict(scratch)
        template_filter = _seccomp.prepare(template=True)
        seccomp = bool(config["seccomp"]) and template_filter()
        seal = _seccomp.prepare() if seccomp else None
        filters = {"template": template_filter.sha256, "run": seal.sha256 if seal else None}
        _warm_up(preload)
        ready = _ready(seccomp, rlimits, landlock, filters)
    except Exception:  # noqa: BLE001 - start-up failed before any agent code ran
        channel.fail(WORKER_CRASHED, "start-up failed")
    if zygote:
        channel.send(ready)
        channel = Channel(_spawner.serve_spawns(channel, scratch))  # in a job's child
        ready = _ready(seccomp, rlimits, landlock, filters)  # as the kernel shows it now
    template = Template(
        supervisor=channel, scratch=scratch, seal=seal, cpu_seconds=limits.cpu_seconds
    )
    channel.send(ready)
    handler: Handler
    if trusted:
        template_handler = _load_handler(spec)

        def handler(body: dict[str, Any]) -> dict[str, Any]:
            return template_handler(body, template.run)

    else:
        template.run(lambda: {"loaded": callable(_load_handler(spec))}, learn=True)

        def handler(body: dict[str, Any]) -> dict[str, Any]:
            return template.run(lambda: _load_handler(spec)(body))

    channel.send({"type": "loaded"})
    _serve(channel, handler)


if __name__ == "__main__":
    main(sys.argv)
