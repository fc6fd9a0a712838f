"""Candidate revisions of the procurement agent, written to disk as a developer's
change would be: a module whose ``run`` replaces the captured agent's function, or a
project built into a wheel and installed into a directory of its own."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

from enclave.incidents import procurement
from enclave.replay import CandidateCode

__all__ = [
    "build_wheel",
    "candidate_source",
    "install_wheel",
    "score_shifted_run",
    "write_candidate",
    "write_project",
]

_HEADER = (
    "from __future__ import annotations\n"
    "from dataclasses import replace\n"
    "from enclave.incidents.procurement import (\n"
    "    AGENT as _CAPTURED, APPROVAL, DECIDER, RETRIEVAL, SUPPLIER_RISK, TEMPLATE, LiveWorld,\n"
    ")\n"
)


def candidate_source(body: str) -> str:
    """A module defining ``run`` (``body``) and ``AGENT``, the captured agent with it."""
    return _HEADER + body + "\nAGENT = replace(_CAPTURED, function=run)\n"


def write_candidate(folder: Path, name: str, body: str) -> CandidateCode:
    """``folder/name.py`` holding the candidate, declared as ``name:AGENT``."""
    (folder / f"{name}.py").write_text(candidate_source(body), encoding="utf-8")
    return CandidateCode.declare(f"{name}:AGENT", folder)


def score_shifted_run() -> str:
    """The captured ``run`` with every supplier score 0.02 lower: near the threshold a
    decision changes."""
    return inspect.getsource(procurement.run).replace("+ jitter\n", "+ jitter\n        - 0.02\n")


_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{dist}"
version = "{version}"

[tool.hatch.build.targets.wheel]
packages = ["{package}"]
"""


def write_project(folder: Path, dist: str, version: str, package: str, body: str) -> Path:
    """A project ``folder`` whose package ``package`` holds the candidate (``body``, as
    for ``candidate_source``) and a second module; returns ``folder``."""
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text(candidate_source(body), encoding="utf-8")
    (folder / package / "_about.py").write_text(f"RELEASE = {version!r}\n", encoding="utf-8")
    (folder / "pyproject.toml").write_text(
        _PYPROJECT.format(dist=dist, version=version, package=package), encoding="utf-8"
    )
    return folder


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def build_wheel(project: Path, out: Path) -> Path:
    """The project built into a wheel in ``out``, offline (hatchling as installed)."""
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), str(project))
    (wheel,) = out.glob("*.whl")
    return wheel


def install_wheel(wheel: Path, target: Path) -> Path:
    """The wheel installed into the directory ``target`` (not the environment)."""
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    return target
