"""The ``replay-enclave`` console script (and ``python -m enclave``).

A command's start-up makes a few hundred thousand objects that live as long as the
process: modules, classes, the command tree. The cyclic collector would walk them over
and over while they are made, and once more at exit, finding nothing to free. So the
console script turns collection off until the command is resolved; then the CLI's
``start_up_done`` (``enclave/cli/_commands.py``) freezes what exists and turns
collection back on for the command's own work — a long-running ``serve`` or ``worker``
collects as usual.
"""

from __future__ import annotations

import gc

__all__ = ["main"]


def main() -> None:
    gc.disable()
    from enclave.cli import main as run

    run()
