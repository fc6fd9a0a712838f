"""The ``replay-enclave`` command line."""

from . import _audit_cmds, _capture_cmds, _demo, _keys_cmds, _service_cmds, _worker_cmd  # noqa: F401 - registers commands
from ._app import app, main
from ._vault import app as vault_app

app.add_typer(vault_app, name="vault")
_service_cmds.register(app)
_worker_cmd.register(app)

__all__ = ["app", "main"]
