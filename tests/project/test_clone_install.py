"""A newcomer's JupyterLab install: a fresh clone, a brand-new virtual environment,
``pip install '.[jupyter]'`` as written, resolved from the package index, with no Node.js
tool on PATH. What a newcomer gets is the committed ``HEAD`` (``git clone``): its
prebuilt extension must be installed and enabled, and the server extension too.

And the other side of the bargain: a clone whose built assets are gone (as after
``npm run clean``) installed with pip's build isolation (a build environment holding
only ``[build-system].requires``, so no jupyter-builder) stops with one line and builds
no wheel, even where Node.js is available.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.path_hiding import path_without, path_without_node

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI") == "true"
# what a newcomer's shell would not carry over from this test run
DROPPED = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER", "CONDA_PREFIX")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STOP = "replay-enclave: the built JupyterLab extension (jupyter_ext/labextension/) is missing"

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Newcomer:
    clone: Path
    venv: Path
    env: dict[str, str]
    install: subprocess.CompletedProcess[str]
    seconds: float

    def run(self, *argv: str) -> str:
        done = subprocess.run(
            [str(self.venv / "bin" / argv[0]), *argv[1:]],
            cwd=self.clone, env=self.env, capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return ANSI.sub("", done.stdout + done.stderr)


def _env(path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    return {**env, "PATH": path}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    base = tmp_path_factory.mktemp("newcomer")
    clone, venv = base / "clone", base / "venv"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = _env(path_without_node(base / "bin", first=[venv / "bin"]))
    started = time.monotonic()
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", ".[jupyter]"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    return Newcomer(clone, venv, env, install, time.monotonic() - started)


@pytest.mark.timeout(900)
def test_fresh_clone_installs_the_prebuilt_extension_enabled_without_node(
    newcomer: Newcomer,
) -> None:
    assert newcomer.install.returncode == 0, newcomer.install.stderr[-3000:]
    print(f"pip install '.[jupyter]' took {newcomer.seconds:.0f} s")  # shown with -rP
    shared = newcomer.venv / "share" / "jupyter" / "labextensions"
    # the line sits under the new environment's folder, not a user or system one
    listed = newcomer.run("jupyter", "labextension", "list")
    section = listed.split(f"{shared}\n", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^\s+replay-enclave v0\.1\.0 enabled OK \(python, replay-enclave\)$",
                     section, re.M), listed  # fmt: skip
    assert _files(shared / "replay-enclave") == _files(
        newcomer.clone / "jupyter_ext" / "labextension"
    )
    servers = newcomer.run("jupyter", "server", "extension", "list")
    assert re.search(r"^\s+jupyter_ext enabled$", servers, re.M), servers
    assert re.search(r"^\s+jupyter_ext\s+OK$", servers, re.M), servers


@pytest.mark.timeout(600)
def test_clone_without_assets_stops_in_one_line_under_build_isolation(tmp_path: Path) -> None:
    if shutil.which("npm") is None and not IN_CI:
        pytest.skip("no npm here: the build would stop at npm, before jupyter-builder")
    clone, venv, out = tmp_path / "clone", tmp_path / "venv", tmp_path / "out"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    shutil.rmtree(clone / "jupyter_ext" / "labextension")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # Node.js stays; every jupyter-builder outside the build environment is hidden
    env = _env(path_without(tmp_path / "bin", {"jupyter-builder"}, first=[venv / "bin"]))
    assert shutil.which("npm", path=env["PATH"]) is not None
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "wheel", "--no-deps", "-w", str(out), "."],
        cwd=clone, env=env, capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    shown = done.stdout + done.stderr
    assert done.returncode != 0, shown[-3000:]
    ours = [line.strip() for line in shown.splitlines() if STOP in line]
    assert len(ours) == 1, shown[-3000:]
    assert "jupyter-builder (installed with jupyterlab) is not in the build environment" in ours[0]
    assert "Traceback" not in shown
    assert not list(out.glob("*.whl")) and not (clone / "jupyter_ext" / "labextension").exists()
