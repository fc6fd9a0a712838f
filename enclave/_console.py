"""The ``replay-enclave`` console script (and ``python -m enclave``).

A command's start-up makes a few hundred thousand objects that live as long as the
process: modules, classes, the command tree. The cyclic collector would walk them over
and over while they are made, and once more at exit, finding nothing to free. So the
console script turns collection off until the command is resolved; then
:func:`start_up_done` freezes what exists (:func:`gc.freeze`: later collections and the
final one skip it) and turns collection back on for the command's own work — a
long-running ``serve`` or ``worker`` collects as usual.
"""

from __future__ import annotations

import gc

__all__ = ["main", "start_up_done"]


def main() -> None:
    gc.disable()
    from enclave.cli import main as run

    run()


def start_up_done() -> None:
    """The command is resolved: what exists now lives until exit. Only after
    :func:`main` turned collection off (an in-process caller, a test, is left alone)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
