"""A handler for tests/unit/sandbox/test_template_warm_up.py: agent code, so it runs in a
fresh fork of the worker's template, and reports which of the named modules that fork
started with (imported by the template before any run, never by the run itself)."""

from __future__ import annotations

import sys
from typing import Any


def present(request: dict[str, Any]) -> dict[str, Any]:
    return {"present": [name for name in request["modules"] if name in sys.modules]}
