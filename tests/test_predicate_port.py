"""The browser's predicate check is a port: its inputs committed in labextension/ must be
the enclave's own. The schemas it validates with are ``PREDICATE_SCHEMA`` and
``PREDICATE_SCHEMA_V1``; the parity corpus its vitest test replays holds today's Python
verdicts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from enclave.certify import PREDICATE_SCHEMA, PREDICATE_SCHEMA_V1, PREDICATE_TYPE, PREDICATE_TYPE_V1

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), ROOT / "scripts" / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schemas_are_the_enclaves() -> None:
    exporter = _script("export-predicate-schema.py")
    committed = json.loads(exporter.TARGET.read_text())
    assert committed == {PREDICATE_TYPE: PREDICATE_SCHEMA, PREDICATE_TYPE_V1: PREDICATE_SCHEMA_V1}
    assert exporter.TARGET.read_text() == exporter.render()


def test_a_stale_schema_file_is_caught(tmp_path: Path) -> None:
    exporter = _script("export-predicate-schema.py")
    stale = json.loads(exporter.render())
    stale[PREDICATE_TYPE]["properties"]["classification"]["enum"].append("no-measurable-influence")
    copy = tmp_path / "schemas.json"
    copy.write_text(json.dumps(stale, indent=1, sort_keys=True) + "\n")
    exporter.TARGET = copy
    assert exporter.main(["--check"]) == 1
    exporter.main([])
    assert exporter.main(["--check"]) == 0


def test_the_check_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "export-predicate-schema.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
