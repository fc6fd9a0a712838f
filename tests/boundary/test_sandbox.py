"""The sandbox keeps replayed code from going live (DESIGN invariant 2).

Each hostile handler in tests/agents/hostile_agents.py tries one forbidden thing inside a
real worker process; each test asserts the call raised Contaminated with the
stable reason code *and* that the effect did not happen (the loopback listener
accepted nothing, the file outside scratch does not exist, no process remains).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import enclave.sandbox
from enclave.sandbox import (
    REASONS,
    Contaminated,
    Sandbox,
    SandboxLimits,
    WorkerClosed,
)
from enclave.sandbox.inside import seccomp
from enclave.sandbox.launch import plan, resolve
from tests.support import loopback

IN_CI = os.environ.get("CI") == "true"
LAYERS = ["bwrap", "UNSAFE_development"]
CANARY = "CANARY-7f3a9c-payload"


def _require(layer: str) -> None:
    """Layers must run in CI; elsewhere a missing tool skips the test."""
    tool = {"bwrap": "bwrap"}.get(layer)
    if tool is not None and shutil.which(tool) is None and not IN_CI:
        pytest.skip(f"{tool} is not installed")


@pytest.fixture(params=LAYERS)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    _require(request.param)
    return Sandbox(
        scratch_root=tmp_path / "scratch",
        isolation=request.param,
        limits=SandboxLimits(wall_seconds=10.0),
    )


def contaminated(sandbox: Sandbox, handler: str, request: dict[str, object]) -> Contaminated:
    with sandbox.start(f"tests.agents.hostile_agents:{handler}") as worker:
        with pytest.raises(Contaminated) as info:
            worker.call(request)
        with pytest.raises(WorkerClosed):
            worker.call({})
    assert info.value.reason in REASONS
    return info.value


def tree(pid: int) -> list[int]:
    found, pending = [pid], [pid]
    while pending:
        parent = pending.pop()
        for tid in os.listdir(f"/proc/{parent}/task"):
            with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as fh:
                children = [int(c) for c in fh.read().split()]
            found += children
            pending += children
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


# -- the public face ----------------------------------------------------------


def test_public_names() -> None:
    assert enclave.sandbox.__all__ == [
        "REASONS",
        "AskRefused",
        "Contaminated",
        "Sandbox",
        "SandboxLimits",
        "SandboxUnavailable",
        "WorkerClosed",
        "WorkerHandle",
        "Zygotes",
        "pooled",
    ]
    assert issubclass(Contaminated, enclave.EnclaveError)
    assert REASONS == {
        "network", "process_spawn", "write_outside_scratch", "native_code",
        "forbidden_operation", "memory_limit", "cpu_limit", "file_size_limit",
        "wall_clock_timeout", "worker_crashed", "handler_error",
    }  # fmt: skip


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SandboxLimits(memory_bytes=0)
    with pytest.raises(ValueError):
        SandboxLimits(wall_seconds=float("nan"))
    with pytest.raises(ValueError):
        Sandbox(scratch_root=tmp_path, isolation="none")
    with pytest.raises(ValueError):
        Sandbox(scratch_root=tmp_path, isolation="UNSAFE_none")
    sandbox = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development")
    with pytest.raises(ValueError):
        sandbox.start("tests.agents.hostile_agents")
    assert SandboxLimits.from_dict(SandboxLimits().to_dict()) == SandboxLimits()


def test_auto_is_bubblewrap_and_claims_layers_only_once_checked(tmp_path: Path) -> None:
    _require("bwrap")
    sandbox = Sandbox(scratch_root=tmp_path)
    env = sandbox.environment
    assert (env["isolation"], env["enclave"], env["verified"]) == ("bwrap", True, False)
    assert env["layers_in_force"] == [] and env["diagnostics"] == ["audit_hook"]
    with sandbox.start("tests.agents.hostile_agents:echo") as worker:
        checked = worker.environment
    assert checked["verified"] is True and sandbox.environment == checked
    assert {"network_namespace", "pid_namespace", "minimal_filesystem", "wall_clock_kill"} <= set(
        checked["layers_in_force"]
    )
    assert "audit_hook" not in checked["layers_in_force"]


# -- well-behaved handlers ----------------------------------------------------


def test_echo_round_trips_many_requests(sandbox: Sandbox) -> None:
    with sandbox.start("tests.agents.hostile_agents:echo") as worker:
        for i in range(200):
            request = {"i": i, "text": "é" * 100, "nested": {"list": [1, 2.5, None, True]}}
            assert worker.call(request) == {"echo": request}
        env = worker.environment
    assert env["isolation"] == sandbox.environment["isolation"]
    assert env["rlimits"]["RLIMIT_AS"] == 1 << 30
    assert env["rlimits"]["RLIMIT_CORE"] == 0
    assert env["seccomp"] is sandbox.environment["seccomp"]


def test_write_inside_scratch_is_allowed_and_scratch_removed(sandbox: Sandbox) -> None:
    worker = sandbox.start("tests.agents.hostile_agents:write_in_scratch")
    reply = worker.call({})
    assert reply["text"] == "written inside scratch"
    if sandbox.environment["enclave"]:  # a private tmpfs: nothing reaches the host
        assert reply["cwd"] == "/scratch"
        assert list(worker.scratch.iterdir()) == []
    else:
        assert Path(reply["cwd"]) == worker.scratch
        assert list(worker.scratch.iterdir()) == []  # emptied after the run that wrote it
    worker.close()
    assert not worker.scratch.exists()


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        ("sqlite_in_scratch", {"rows": 1}),
        ("tempfiles_in_scratch", {"ok": True}),
        ("asyncio_agent", {"doubled": 42}),
    ],
)
def test_ordinary_work_is_allowed(
    sandbox: Sandbox, handler: str, expected: dict[str, object]
) -> None:
    with sandbox.start(f"tests.agents.hostile_agents:{handler}") as worker:
        assert worker.call({"n": 21}) == expected


def test_worker_gets_no_credentials_and_no_extra_descriptors(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_TOKEN", CANARY)
    with sandbox.start("tests.agents.hostile_agents:read_env") as worker:
        reply = worker.call({})
    assert CANARY not in str(reply["env"])
    assert set(reply["env"]) == {"HOME", "LC_ALL", "PWD", "PYTHONHASHSEED", "TMPDIR"}
    # stdin/out/err, the run's socket to its template (not the supervisor's), and the
    # descriptor listdir itself opens
    assert len(reply["fds"]) <= 5


def test_replayed_code_does_not_inherit_the_homes_payload_lock(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A worker holds its home's payload lock while it replays; the code under audit must
    not hold it too (it could then keep a migration out, or learn the home's path)."""
    import fcntl

    from enclave import Home, Runtime

    runtime = Runtime.open(Home.init(tmp_path / "home"), env={})
    try:
        runtime.payloads.hold()
        held = [
            fd
            for fd in os.listdir("/proc/self/fd")
            if os.path.realpath(f"/proc/self/fd/{fd}").endswith("payloads.lock")
        ]
        assert len(held) == 1
        assert fcntl.fcntl(int(held[0]), fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        with sandbox.start("tests.agents.hostile_agents:fd_targets") as worker:
            targets = worker.call({})["targets"]
        home = str(runtime.home.root)
        assert not [t for t in targets.values() if "payloads.lock" in t or home in t]
    finally:
        runtime.close()


# -- network --------------------------------------------------------------------


@pytest.mark.parametrize(
    "handler", ["connect", "connect_swallowed", "urlopen", "http_client", "thread_connect"]
)
def test_network_is_refused(sandbox: Sandbox, listener: socket.socket, handler: str) -> None:
    port = listener.getsockname()[1]
    error = contaminated(sandbox, handler, {"port": port})
    assert error.reason == "network"
    assert loopback.accepted(listener) == 0


@pytest.mark.parametrize("handler", ["resolve", "gethostbyname"])
def test_name_resolution_is_refused(sandbox: Sandbox, handler: str) -> None:
    error = contaminated(sandbox, handler, {"host": "localhost"})
    assert error.reason == "network"
    assert error.detail.startswith("socket.")


def test_ctypes_connect_is_refused(sandbox: Sandbox, listener: socket.socket) -> None:
    error = contaminated(sandbox, "ctypes_connect", {"port": listener.getsockname()[1]})
    assert error.reason in ("native_code", "network")
    assert loopback.accepted(listener) == 0


# -- processes ------------------------------------------------------------------


@pytest.mark.parametrize("handler", ["run_subprocess", "run_os_system", "fork"])
def test_process_spawn_is_refused(sandbox: Sandbox, tmp_path: Path, handler: str) -> None:
    marker = tmp_path / "spawned"
    error = contaminated(sandbox, handler, {"path": str(marker)})
    assert error.reason == "process_spawn"
    assert not marker.exists()


def test_spawn_without_audit_event_is_stopped_by_seccomp(sandbox: Sandbox, tmp_path: Path) -> None:
    if not sandbox.environment["seccomp"]:
        pytest.skip("no seccomp filter for this platform")
    marker = tmp_path / "spawned"
    error = contaminated(sandbox, "spawn_without_audit_event", {"path": str(marker)})
    assert (error.reason, error.detail) == ("forbidden_operation", "seccomp")
    assert not marker.exists()


# -- files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "handler", ["write_outside", "symlink_escape", "tamper_then_write", "sqlite_outside"]
)
def test_write_outside_scratch_is_refused(sandbox: Sandbox, tmp_path: Path, handler: str) -> None:
    target = tmp_path / "outside.txt"
    error = contaminated(sandbox, handler, {"path": str(target)})
    assert error.reason == "write_outside_scratch"
    assert not target.exists()


def test_remove_outside_scratch_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("keep", encoding="utf-8")
    error = contaminated(sandbox, "remove_outside", {"path": str(target)})
    assert (error.reason, error.detail) == ("write_outside_scratch", "os.remove")
    assert target.read_text(encoding="utf-8") == "keep"


@pytest.mark.parametrize("layer", LAYERS)
def test_file_size_limit(tmp_path: Path, layer: str) -> None:
    _require(layer)
    sandbox = Sandbox(
        scratch_root=tmp_path, isolation=layer, limits=SandboxLimits(file_size_bytes=1 << 20)
    )
    error = contaminated(sandbox, "write_big_file", {"chunks": 4})
    assert (error.reason, error.detail) == ("file_size_limit", "SIGXFSZ")


# -- limits ---------------------------------------------------------------------


@pytest.mark.parametrize("handler", ["memory_bomb", "memory_growth"])
def test_memory_limit(sandbox: Sandbox, handler: str) -> None:
    assert contaminated(sandbox, handler, {}).reason == "memory_limit"


@pytest.mark.parametrize("layer", LAYERS)
def test_cpu_limit(tmp_path: Path, layer: str) -> None:
    _require(layer)
    sandbox = Sandbox(scratch_root=tmp_path, isolation=layer, limits=SandboxLimits(cpu_seconds=1))
    error = contaminated(sandbox, "burn_cpu", {})
    assert (error.reason, error.detail) == ("cpu_limit", "SIGXCPU")


def test_wall_clock_kills_the_whole_tree(sandbox: Sandbox) -> None:
    worker = sandbox.start("tests.agents.hostile_agents:sleep_forever")
    pids = tree(worker.pid)
    assert pids and all(alive(pid) for pid in pids)
    started = time.monotonic()
    with pytest.raises(Contaminated) as info:
        worker.call({}, timeout=0.5)
    assert time.monotonic() - started < 5.0
    assert (info.value.reason, info.value.detail) == ("wall_clock_timeout", "wall clock")
    deadline = time.monotonic() + 2.0
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(alive(pid) for pid in pids)
    with pytest.raises(WorkerClosed):
        worker.call({})
    worker.close()
    assert not worker.scratch.exists()


# -- failures carry no payload --------------------------------------------------


@pytest.mark.parametrize(
    ("handler", "detail"),
    [("raise_with_canary", "ValueError"), ("raise_custom_class", "non-builtin exception")],
)
def test_handler_error_carries_no_payload(sandbox: Sandbox, handler: str, detail: str) -> None:
    error = contaminated(sandbox, handler, {"canary": CANARY})
    assert (error.reason, error.detail) == ("handler_error", detail)
    for text in (str(error), repr(error), error.detail, repr(error.args)):
        assert CANARY not in text


def test_non_dict_reply_is_a_handler_error(sandbox: Sandbox) -> None:
    error = contaminated(sandbox, "not_a_dict", {})
    assert (error.reason, error.detail) == ("handler_error", "BadReply")


def test_tampering_with_limits_is_refused(sandbox: Sandbox) -> None:
    error = contaminated(sandbox, "set_rlimit", {})
    assert (error.reason, error.detail) == ("forbidden_operation", "resource.setrlimit")


def test_forged_frames_are_a_crash(sandbox: Sandbox) -> None:
    error = contaminated(sandbox, "forge_reply", {})
    assert (error.reason, error.detail) == ("worker_crashed", "protocol violation")


def test_closed_handle_refuses_calls(tmp_path: Path) -> None:
    worker = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development").start(
        "tests.agents.hostile_agents:echo"
    )
    worker.close()
    worker.close()
    with pytest.raises(WorkerClosed):
        worker.call({})


def test_missing_handler_fails_at_start(tmp_path: Path) -> None:
    sandbox = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development")
    with pytest.raises(Contaminated) as info:
        sandbox.start("tests.agents.hostile_agents:does_not_exist")
    assert (info.value.reason, info.value.detail) == ("handler_error", "AttributeError")
    assert list(tmp_path.iterdir()) == []


def test_a_handler_that_fails_before_the_checks_read_it_is_still_its_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine: the worker reports ``ready``, fails to load its handler and
    exits before the supervisor reads its ``/proc`` entries. The start fails with the
    handler's own error, as on an idle machine (not as an unavailable sandbox)."""
    from pydoc import locate

    checked = locate("enclave.sandbox._handle._checks.verify")
    assert callable(checked)

    def slow_verify(launch, *, launcher_pid, worker_pid, ready, environ):  # type: ignore[no-untyped-def]
        pid = worker_pid or launcher_pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the worker is gone (a zombie counts)
            try:
                if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z":
                    break
            except (OSError, IndexError):
                break
            time.sleep(0.01)
        return checked(
            launch, launcher_pid=launcher_pid, worker_pid=worker_pid, ready=ready, environ=environ
        )

    monkeypatch.setattr("enclave.sandbox._handle._checks.verify", slow_verify)
    sandbox = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development")
    with pytest.raises(Contaminated) as info:
        sandbox.start("tests.agents.hostile_agents:does_not_exist")
    assert (info.value.reason, info.value.detail) == ("handler_error", "AttributeError")


# -- the OS layers hold on their own ----------------------------------------------

_ESCAPE = """
import socket, sys
port, targets = int(sys.argv[1]), sys.argv[2:]
results = []
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    results.append("connected")
except OSError:
    results.append("no-network")
for target in targets:
    try:
        with open(target, "w") as fh:
            fh.write("escaped")
        results.append("wrote")
    except OSError:
        results.append("no-write")
print(",".join(results))
"""


def test_os_layer_without_tripwire(tmp_path: Path, listener: socket.socket) -> None:
    """Plain Python, no audit hook, no seccomp: bubblewrap alone stops it."""
    _require("bwrap")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    in_tmp = tmp_path / "outside.txt"  # /tmp is a private tmpfs inside bubblewrap
    host_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))  # a directory the sandbox shares
    try:
        on_host = host_dir / "outside.txt"
        argv = [sys.executable, "-I", "-c", _ESCAPE, str(listener.getsockname()[1])]
        argv += [str(in_tmp), str(on_host)]
        view = plan(python_path=[], protected=[str(tmp_path)])
        wrapped = resolve("bwrap").wrap(argv, view=view, scratch_bytes=1 << 20)
        done = subprocess.run(wrapped, capture_output=True, text=True, timeout=30, check=True)
        assert loopback.accepted(listener) == 0
        assert done.stdout.strip().split(",") == ["no-network", "no-write", "no-write"]
        assert not in_tmp.exists()
        assert not on_host.exists()
    finally:
        shutil.rmtree(host_dir)


def test_supervisor_survives_hostile_worker_signals(tmp_path: Path) -> None:
    """The worker's process group is its own: killing it never reaches us."""
    worker = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development").start(
        "tests.agents.hostile_agents:echo"
    )
    assert os.getpgid(worker.pid) == worker.pid != os.getpgrp()
    os.killpg(worker.pid, signal.SIGKILL)
    with pytest.raises(Contaminated) as info:
        worker.call({})
    assert (info.value.reason, info.value.detail) == ("worker_crashed", "SIGKILL")
    worker.close()


def test_worker_starts_from_a_virtual_environments_console_script(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A console script in a virtual environment runs with the environment's ``bin`` first
    on the import path; its ``python`` is a link to an interpreter outside the
    environment. The worker still starts (the link's directory is not bound whole over
    the interpreter)."""
    venv, elsewhere = tmp_path / "venv", tmp_path_factory.mktemp("scratch-home")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from pathlib import Path; from enclave.sandbox import Sandbox;"
        "box = Sandbox(scratch_root=Path(sys.argv[2]), isolation='bwrap');"
        "w = box.start('tests.agents.hostile_agents:echo');"
        "print(w.call({'x': 1})); w.close()"
    )
    done = subprocess.run(
        # scratch apart from the environment: the folder holding it is never bound
        [str(venv / "bin" / "python"), "-c", code, str(venv / "bin"), str(elsewhere / "scratch")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-600:]
    assert "'echo'" in done.stdout


# -- the template forks, its runs cannot -------------------------------------------------

_STACKED = """
import os
from enclave.sandbox.inside import _seccomp
assert _seccomp.install(template=True)
pid = os.fork()  # the template's plain fork: allowed
if pid == 0:
    assert _seccomp.install()  # a run loads the ordinary filter on top
    os.fork()  # the very same fork: killed
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), flush=True)
"""

_TEMPLATE_CLONE = """
import ctypes, sys
from enclave.sandbox.inside import _seccomp
assert _seccomp.install(template=True)
libc = ctypes.CDLL(None, use_errno=True)
print(libc.syscall(int(sys.argv[1]), ctypes.c_ulong(int(sys.argv[2], 16)), None, None, None, None))
"""


def _seccomp_script(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    if not seccomp.supported():
        pytest.skip("no seccomp filter for this platform")
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=30,
        cwd=Path(__file__).resolve().parents[2], check=False,
    )  # fmt: skip


def test_template_forks_and_its_runs_cannot() -> None:
    done = _seccomp_script(_STACKED)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == str(-signal.SIGSYS)


@pytest.mark.parametrize(
    "flags",
    [
        "0",  # no SIGCHLD, no thread: not the plain fork
        "00004111",  # vfork: shares memory with the template
        "11200011",  # a plain fork into a new user namespace
        "41200011",  # ... into a new network namespace
    ],
)
def test_template_allows_only_the_plain_fork(flags: str) -> None:
    import platform

    from enclave.sandbox.inside.seccomp import NUMBERS

    done = _seccomp_script(_TEMPLATE_CLONE, str(NUMBERS[platform.machine()]["clone"]), flags)
    assert done.returncode == -signal.SIGSYS, (done.returncode, done.stdout, done.stderr[-300:])


def test_runs_use_code_compiled_from_the_current_source(tmp_path: Path) -> None:
    """The template compiles once what runs imported (``_codecache``), and serves that
    code only while the source still holds the bytes it compiled."""
    code = tmp_path / "code"
    code.mkdir()
    module = code / "agent_module_under_test.py"
    module.write_text("VALUE = 1\ndef handle(request):\n    return {'value': VALUE}\n")
    sandbox = Sandbox(
        scratch_root=tmp_path / "scratch",
        isolation="UNSAFE_development",
        python_path=[str(Path(__file__).resolve().parents[2]), str(code), *sys.path],
    )
    with sandbox.start("agent_module_under_test:handle") as worker:
        assert worker.call({}) == {"value": 1}  # served from the template's compiled code
        module.write_text("VALUE = 2\ndef handle(request):\n    return {'value': VALUE}\n")
        assert worker.call({}) == {"value": 2}
        assert worker.call({}) == {"value": 2}
