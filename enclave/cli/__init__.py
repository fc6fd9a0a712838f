"""The ``replay-enclave`` command line. Commands load when named (see ``_commands``)."""

from ._app import app, main

__all__ = ["app", "main"]
