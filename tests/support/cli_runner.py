"""The ``replay-enclave`` command run as its own process, as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

_MAIN = "from enclave.cli import main; main()"


def run_cli(
    home: Path,
    *args: str,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``replay-enclave ARGS --home HOME``; wide columns so tables are not folded."""
    return subprocess.run(
        [sys.executable, "-c", _MAIN, *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "250"} if env is None else dict(env),
        cwd=cwd,
        check=False,
    )
