"""The build function of the wheel's jupyter-builder hook (pyproject.toml): rebuild the
JupyterLab extension when its built assets are missing, or stop the build with one line.

The built extension in ``jupyter_ext/labextension/`` is committed, and
``tests/project/test_labextension_assets.py`` holds it to the sources in ``labextension/``, so an
install from a clone or an sdist copies it and needs no Node.js. The hook calls this only
when the assets are missing (after ``npm run clean``; ``skip-if-exists``), and for an
editable install, which it never skips: then present assets mean nothing to do.

hatch-jupyter-builder's own ``npm_builder`` would do here: on a missing npm it raises a
``ValueError`` (a traceback in pip's output); it runs ``npm install``, not ``npm ci``
from the lock; and it cannot tell that the build environment lacks ``jupyter-builder``
(pip's isolated build environment never has it: jupyterlab is too big to install for
every ``pip install .``). Each of those ends the whole build here with one line, so no
wheel without the extension is made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "labextension"
OUTPUT = ROOT / "jupyter_ext" / "labextension"
# the same files as the hook's skip-if-exists and ensured-targets (a test holds them equal)
ASSETS = ("package.json", "install.json", "static/style.js")
NODE_MAJOR = 20  # labextension/package.json "engines"


def _stop(reason: str) -> SystemExit:
    return SystemExit(
        "replay-enclave: the built JupyterLab extension (jupyter_ext/labextension/) is "
        f"missing and cannot be rebuilt here: {reason}. Restore it with "
        "'git checkout -- jupyter_ext/labextension', or rebuild it with "
        "scripts/build-labextension.sh (Node.js >= 20 and jupyterlab), then install again."
    )


def assets_present() -> bool:
    return all((OUTPUT / name).is_file() for name in ASSETS)


def _node_major(path: str) -> int | None:
    node = shutil.which("node", path=path)
    if node is None:
        return None
    shown = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    try:
        return int(shown.stdout.strip().lstrip("v").split(".")[0])
    except ValueError:
        return None


def build(target_name: str, version: str, **_: object) -> None:
    """hatch-jupyter-builder's build-function signature (target "wheel" or "sdist",
    version "standard" or "editable")."""
    if assets_present():
        return
    # this interpreter's scripts first: an environment that is not activated (as
    # --no-build-isolation installs into) still finds its own jupyter-builder
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    npm = shutil.which("npm", path=path)
    if npm is None:
        raise _stop(f"npm (Node.js >= {NODE_MAJOR}) is not on PATH")
    major = _node_major(path)
    if major is None or major < NODE_MAJOR:
        found = "no node" if major is None else f"Node.js {major}"
        raise _stop(f"Node.js >= {NODE_MAJOR} is needed, found {found}")
    if shutil.which("jupyter-builder", path=path) is None:
        raise _stop("jupyter-builder (installed with jupyterlab) is not in the build environment")
    env = {**os.environ, "PATH": path}
    for argv in (
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        [npm, "run", "--silent", "build"],
    ):
        done = subprocess.run(argv, cwd=SOURCE, env=env, check=False)
        if done.returncode != 0:
            raise _stop(f"'npm {argv[1]}' in labextension/ exited {done.returncode} (output above)")
    if not assets_present():
        raise _stop("the build finished without writing them")
