"""The ``replay-enclave`` command line."""

from . import _audit_cmds, _capture_cmds, _demo  # noqa: F401 - registers commands
from ._app import app, main

__all__ = ["app", "main"]
