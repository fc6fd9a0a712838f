"""The repository's scripts (``scripts/*.py``) as modules, for the tests that check what
they write or reuse what they build."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["load_script"]

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>`` (``export-predicate-corpus.py``), loaded fresh."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_")[:-3], SCRIPTS / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
