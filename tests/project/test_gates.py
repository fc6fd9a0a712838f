"""The code gates run with the tests: ruff (lint and format) and mypy --strict on the
packages. A finding fails the suite like any other broken promise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("args", [("check", "."), ("format", "--check", ".")])
def test_ruff(args: tuple[str, ...]) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is part of the test extras"
    done = run(ruff, *args)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.slow
def test_mypy_strict() -> None:
    done = run(sys.executable, "-m", "mypy")
    assert done.returncode == 0, done.stdout[-4000:]
