"""The ``replay-enclave`` command line. Commands load when named (see ``_commands``).

Besides the root command (``app``, ``main``) and its table of contents (``COMMANDS``,
``LazySubcommands``), the front names the pieces of commands that other code drives
directly: the demo's reference incidents (``capture_incidents``, ``demo_audits``), a
worker's link to the grant service (``service_grants``), a command group or two for a
Typer app of one's own (``vault_app``, ``register_service_commands``), and what
``capture --input`` and ``payloads migrate`` read (``read_input_file``,
``erased_specimens``). Every name is imported on first use: ``replay-enclave`` starts
with the root command alone.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._app import app as app
    from ._app import main as main
    from ._capture_cmds import read_input_file as read_input_file
    from ._commands import COMMANDS as COMMANDS
    from ._commands import LazySubcommands as LazySubcommands
    from ._demo import capture_incidents as capture_incidents
    from ._demo import demo_audits as demo_audits
    from ._payloads_cmds import erased_specimens as erased_specimens
    from ._service_cmds import register_service_commands as register_service_commands
    from ._vault import vault_app as vault_app
    from ._worker_cmd import service_grants as service_grants

_FRONT = {
    "app": "._app",
    "main": "._app",
    "COMMANDS": "._commands",
    "LazySubcommands": "._commands",
    "capture_incidents": "._demo",
    "demo_audits": "._demo",
    "service_grants": "._worker_cmd",
    "vault_app": "._vault",
    "register_service_commands": "._service_cmds",
    "read_input_file": "._capture_cmds",
    "erased_specimens": "._payloads_cmds",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
