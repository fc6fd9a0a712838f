"""The built JupyterLab extension is committed (``jupyter_ext/labextension/``), so that an
install from a clone needs no Node.js. These tests hold it to that bargain:

* the committed files are exactly what the sources in ``labextension/`` build to: a wheel
  of a copy of the tree without them, in a folder of its own, makes the hook's build
  function rebuild them from the lockfile (the build is byte-reproducible, see
  ``labextension/rspack.config.js``); never compared with a build in place, which would
  hide a stale commit;
* every built file is tracked by git (a new chunk name not added is caught);
* with the assets in place, neither a wheel nor an editable build needs npm;
* with them missing and no npm, the build stops with one line and leaves no wheel.

``tests/project/test_clone_install.py`` installs a fresh clone the way a newcomer does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from scripts.labextension_build import ASSETS
from tests.support.path_hiding import path_without_node

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "jupyter_ext" / "labextension"
IN_CI = os.environ.get("CI") == "true"
STOP = "replay-enclave: the built JupyterLab extension (jupyter_ext/labextension/) is missing"
HINT = "run scripts/build-labextension.sh and commit jupyter_ext/labextension/"
SHARED = "replay_enclave-0.1.0.data/data/share/jupyter/labextensions/replay-enclave"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _worktree(*paths: str) -> list[str]:
    """Files git tracks or would track (not ignored) under ``paths``, as on disk now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return sorted({name for name in listed.split("\0") if name and (ROOT / name).is_file()})


def _copy(names: list[str], dst: Path) -> None:
    for name in names:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dst / name)


def _needs_npm() -> None:
    if shutil.which("npm") is None:
        if IN_CI:
            pytest.fail("npm (Node.js >= 20) is needed to rebuild the extension in CI")
        pytest.skip("no npm here: the committed extension cannot be rebuilt")


def _source_tree(dst: Path, *, with_assets: bool) -> Path:
    names = [n for n in _worktree() if with_assets or not n.startswith("jupyter_ext/labextension/")]
    _copy(names, dst)
    return dst


def _backend(
    hook: str, src: Path, out: Path, no_node: Path | None, *, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The build backend's ``hook`` called as pip or uv call it without build isolation
    (the build environment is this one); with no Node.js tool on PATH unless ``no_node``
    (a scratch folder for the PATH's shadows) is None."""
    out.mkdir()
    here = Path(sys.executable).parent
    if no_node is None:
        path = os.pathsep.join([str(here), os.environ.get("PATH", "")])
    else:
        path = path_without_node(no_node, first=[here])
    code = f"import sys, hatchling.build as backend; backend.{hook}(sys.argv[1])"
    return subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=src, env={**os.environ, "PATH": path}, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


def _shipped(wheel: Path) -> dict[str, bytes]:
    """The wheel's shared data for JupyterLab, by path under the extension's folder."""
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.startswith("jupyter_ext/labextension/")]
        return {
            name.removeprefix(f"{SHARED}/"): archive.read(name)
            for name in archive.namelist()
            if name.startswith(f"{SHARED}/")
        }


def test_hook_and_build_function_check_the_same_files() -> None:
    hatch = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    hook = hatch["build"]["hooks"]["jupyter-builder"]
    expected = [f"jupyter_ext/labextension/{name}" for name in ASSETS]
    assert hook["skip-if-exists"] == expected
    assert hook["ensured-targets"] == expected
    assert hook["build-function"] == "scripts.labextension_build.build"
    # what JupyterLab loads first is there too (its name carries a content hash)
    entry = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))
    assert (BUILT / entry["jupyterlab"]["_build"]["load"]).is_file()


def test_every_built_file_is_tracked() -> None:
    on_disk = {p.relative_to(ROOT).as_posix() for p in BUILT.rglob("*") if p.is_file()}
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", "jupyter_ext/labextension"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert on_disk, "jupyter_ext/labextension/ is empty: " + HINT
    assert on_disk == set(filter(None, tracked.split("\0"))), HINT


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_committed_assets_are_what_the_sources_build_to(tmp_path: Path) -> None:
    """A wheel of a copy of this tree without the built assets, in another folder (so the
    build's independence of the checkout's folder is tested too): the hook's build
    function runs npm ci from the lockfile and the build, and the wheel carries what it
    built. Compared with the committed files, never with a build in place."""
    _needs_npm()
    src = _source_tree(tmp_path / "src", with_assets=False)
    done = _backend("build_wheel", src, tmp_path / "out", None, timeout=540)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    built, committed = _files(src / "jupyter_ext" / "labextension"), _files(BUILT)
    differing = sorted(
        name for name in built.keys() | committed.keys() if built.get(name) != committed.get(name)
    )
    assert not differing, f"stale jupyter_ext/labextension/, differing: {differing}; {HINT}"
    (wheel,) = (tmp_path / "out").glob("*.whl")
    assert _shipped(wheel) == built


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["build_wheel", "build_editable"])
def test_without_assets_and_npm_the_build_stops_in_one_line(tmp_path: Path, hook: str) -> None:
    """Only npm is missing (the build environment is this one, with jupyter-builder):
    one line of ours, no traceback, no wheel."""
    src = _source_tree(tmp_path / "src", with_assets=False)
    out = tmp_path / "out"
    done = _backend(hook, src, out, tmp_path / "bin")
    assert done.returncode == 1, done.stderr[-2000:]
    ours = [line for line in done.stderr.splitlines() if not line.startswith("INFO:")]
    assert len(ours) == 1 and ours[0].startswith(STOP), done.stderr[-2000:]
    assert "npm (Node.js >= 20) is not on PATH" in ours[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert list(out.iterdir()) == []
    assert not (src / "jupyter_ext" / "labextension").exists()  # nothing half-built either


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["build_wheel", "build_editable"])
def test_with_assets_no_build_needs_npm(tmp_path: Path, hook: str) -> None:
    """With the committed assets, no npm on PATH, the wheel (and the editable wheel that
    ``uv pip install --no-build-isolation -e .`` builds) carries them unchanged."""
    src = _source_tree(tmp_path / "src", with_assets=True)
    out = tmp_path / "out"
    done = _backend(hook, src, out, tmp_path / "bin")
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    assert _shipped(wheel) == _files(BUILT)
