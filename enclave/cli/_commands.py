"""The root command's table of contents, loaded one command at a time.

A command module is imported only when its command runs (or its own ``--help`` is
asked for): ``replay-enclave specimens list`` must not pay for the replay engine's
imports, nor for turning two dozen functions into click commands. The root's help is
written from this table, so ``--help`` imports no command module at all. A test keeps
each line here equal to its command's own docstring.

A group's commands are likewise turned into click commands one at a time, when named:
``specimens list`` does not pay for reading the parameters of ``show``, ``erase``,
``tag`` and ``untag``.
"""

from __future__ import annotations

import copy
import gc
import importlib
from dataclasses import dataclass
from typing import Any

import typer
import typer.core
import typer.main

__all__ = ["COMMANDS", "LazyCommands", "LazySubcommands"]


def start_up_done() -> None:
    """The command is resolved: what exists now lives until exit (:func:`gc.freeze`:
    later collections and the final one skip it). Only after the console script
    (``enclave/_console.py``) turned collection off; an in-process caller is left alone."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


@dataclass(frozen=True)
class Entry:
    module: str  # under enclave.cli
    attr: str  # a function (one command) or a Typer (a group)
    help: str  # the first line of its help, for the root's command list
    also: tuple[str, ...] = ()  # modules that add commands to the group

    def load(self, name: str) -> typer.core.TyperCommand | typer.core.TyperGroup:
        for extra in self.also:
            importlib.import_module(f"enclave.cli.{extra}")
        target = getattr(importlib.import_module(f"enclave.cli.{self.module}"), self.attr)
        if isinstance(target, typer.Typer):
            return _group(target, name)
        holder = typer.Typer(
            add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
        )
        holder.command(name, rich_help_panel=None)(target)
        command = typer.main.get_command(holder)
        assert isinstance(command, typer.core.TyperCommand)
        return command


def _group(target: typer.Typer, name: str) -> typer.core.TyperGroup:
    """``target`` as a click group whose commands are built when named: typer builds the
    group from a copy without commands, which are then handed over unbuilt."""
    empty = copy.copy(target)  # shallow: the copy shares everything but this list
    empty.registered_commands = []
    group = typer.main.get_group(empty)
    assert isinstance(group, LazySubcommands), "groups are made by command_group"
    group.defer(
        target.registered_commands,
        pretty_exceptions_short=target.pretty_exceptions_short,
        rich_markup_mode=target.rich_markup_mode,
    )
    group.name = name
    return group


COMMANDS: dict[str, Entry] = {
    "audit": Entry(
        "_audit_cmds",
        "audit_cmd",
        "Replay a specimen with one declared intervention and certify the comparison.",
    ),
    "verify": Entry(
        "_audit_cmds",
        "verify_cmd",
        "Check a certificate's signature, statement, predicate schema and ledger linkage.",
    ),
    "init": Entry(
        "_capture_cmds",
        "init",
        "Create an enclave home (SQLite ledger, local keys, payload store).",
    ),
    "agents": Entry(
        "_capture_cmds",
        "agents",
        "List registered agents (entry point group ``replay_enclave.agents``).",
    ),
    "capture": Entry(
        "_capture_cmds",
        "capture_cmd",
        "Run an agent live, capture every boundary crossing, and seal the specimen.",
    ),
    "demo": Entry(
        "_demo",
        "demo",
        "Init a home, capture the three reference incidents, run five certified audits.",
    ),
    "serve": Entry(
        "_service_cmds",
        "serve",
        "Run the HTTP service (REST under /api/v1, OpenAPI at /openapi.json).",
    ),
    "worker": Entry(
        "_worker_cmd",
        "worker",
        "Claim and run audit jobs (prepare, replay batches, finalize) until stopped.",
    ),
    "witness": Entry(
        "_witness_cmd",
        "witness",
        "Run a witness that cosigns a log's checkpoints only when consistent.",
    ),
    "workers": Entry(
        "_worker_cmd",
        "worker_token_app",
        "Replay workers' tokens for the grant service (Vault mode).",
    ),
    "specimens": Entry(
        "_capture_cmds",
        "specimens_app",
        "Sealed specimens (metadata only).",
        also=("_keys_cmds", "_release_cmds"),
    ),
    "regress": Entry(
        "_release_cmds",
        "regress_cmd",
        "Rerun a specimen library against a candidate release and sign a release report.",
    ),
    "release": Entry(
        "_release_cmds",
        "release_app",
        "Signed release reports stored in the database: list, export, verify.",
    ),
    "certificates": Entry(
        "_audit_cmds",
        "certificates_app",
        "Signed certificates stored in the database: list them, export them as files.",
    ),
    "ledger": Entry("_capture_cmds", "ledger_app", "The evidence ledger."),
    "keys": Entry("_keys_cmds", "keys_app", "Key lifecycle: rotate, rewrap, trim."),
    "retention": Entry(
        "_keys_cmds",
        "retention_app",
        "Retention: sweep out expired specimens, retire specimens from the library.",
    ),
    "vault": Entry(
        "_vault",
        "vault_app",
        "Provision Vault/OpenBao (policies, AppRole roles, tenant keys) and run a dev server.",
    ),
    "analyst": Entry(
        "_service_cmds", "analyst_app", "Analysts of the service and their bearer tokens."
    ),
    "policy": Entry(
        "_service_cmds",
        "policy_app",
        "Intervention policies: draft -> validated -> active -> retired.",
    ),
    "payloads": Entry(
        "_payloads_cmds",
        "payloads_app",
        "Payload ciphertext: move it between the home's files and the database.",
    ),
}


class LazyCommands(typer.core.TyperGroup):
    """The root group: commands come from ``COMMANDS`` when they are named."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = entry.load(cmd_name)
        if not isinstance(self.commands[cmd_name], LazySubcommands):
            start_up_done()  # the command's modules are imported (a group: once it is built)
        return self.commands[cmd_name]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry.help) for name, entry in COMMANDS.items()])


class LazySubcommands(typer.core.TyperGroup):
    """A command group (``specimens``, ``ledger``, ...) whose commands stay typer's
    records until named; listing them (help, completion) builds them all, in the order
    they were declared."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, typer.models.CommandInfo] = {}
        self._deferred: list[str] = []
        self._build: dict[str, Any] = {}

    def defer(
        self,
        infos: list[typer.models.CommandInfo],
        *,
        pretty_exceptions_short: bool,
        rich_markup_mode: Any,
    ) -> None:
        """Hold ``infos`` to build on first use, named as typer names them."""
        for info in infos:
            assert info.callback is not None
            self._pending[info.name or typer.main.get_command_name(info.callback.__name__)] = info
        self._deferred = list(self._pending)
        self._build = {
            "pretty_exceptions_short": pretty_exceptions_short,
            "rich_markup_mode": rich_markup_mode,
        }

    def list_commands(self, ctx: Any) -> list[str]:
        # typer's order: a group's own commands as declared, then its subgroups
        return [*self._deferred, *(n for n in self.commands if n not in self._deferred)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        info = self._pending.pop(cmd_name, None)
        if info is not None:
            self.commands[cmd_name] = typer.main.get_command_from_info(info, **self._build)
        start_up_done()  # the command is built
        return self.commands.get(cmd_name)
