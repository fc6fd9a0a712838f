"""The root ``replay-enclave`` command and its error edge.

Every error becomes one line on stderr and a non-zero exit. The error's class says
which (``ledger.ErrorOutcome``): 1 a record or certificate does not verify, 2 bad input
or a refusal, 3 infrastructure trouble, 4 the agent failed; an exception no class speaks
for is an internal fault, 70 (type name only — its text may hold content).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ledger import LedgerError, exit_code_for

from .._errors import EnclaveError
from .._home import Home, default_home
from ._commands import LazyCommands, LazySubcommands

if TYPE_CHECKING:
    from .._runtime import Runtime


def command_group(help: str, **options: Any) -> typer.Typer:
    """A command group with the CLI's settings: plain (click) help and errors, which
    start without loading Rich's Markdown and traceback renderers; its commands are
    built when named (``LazySubcommands``)."""
    options.setdefault("cls", LazySubcommands)
    return typer.Typer(
        help=help,
        no_args_is_help=True,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        **options,
    )


app = command_group(
    "Capture agent runs as sealed specimens, replay them in an enclave, certify the result.",
    name="replay-enclave",
    cls=LazyCommands,
    epilog=(
        "Exit codes: 0 done; 1 a certificate or stored record failed verification; "
        "2 bad input or a refusal; 3 infrastructure trouble; 4 an audit ran and failed "
        "(or the agent failed); 70 an internal fault."
    ),
)

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home", help="Enclave home (default: $REPLAY_ENCLAVE_HOME or ./.replay-enclave)."
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object instead of tables.")
]


def installed_version() -> str:
    """This distribution's version, from the ``METADATA`` of the first ``sys.path``
    folder holding a ``replay_enclave-*.dist-info`` (the copy ``importlib.metadata``
    finds). Importing ``importlib.metadata`` (email, zipfile, csv, ...) would cost
    ``--version`` more than the rest of its start; it stays the fallback for a layout
    read here finds nothing in (a zip, an egg)."""
    for entry in sys.path:
        folder = entry or "."
        try:
            names = sorted(n for n in os.listdir(folder) if n.startswith(_DIST_INFO))
        except OSError:  # missing, a file (a zip), unreadable
            continue
        for name in (n for n in names if n.endswith(".dist-info")):
            try:
                with open(os.path.join(folder, name, "METADATA"), encoding="utf-8") as meta:
                    for line in meta:
                        if not line.strip():
                            break  # the headers end at the first blank line
                        if line.startswith("Version:"):
                            return line[len("Version:") :].strip()
            except OSError:
                continue
    from importlib.metadata import version

    return version("replay-enclave")


_DIST_INFO = "replay_enclave-"  # the normalised distribution name, as wheels write it


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"replay-enclave {installed_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """Capture agent runs as sealed specimens, replay them in an enclave, certify the result."""


def open_runtime(home: Path | None) -> Runtime:
    from .._runtime import Runtime

    return Runtime.open(Home.open(home or default_home()))


def exit_code(exc: BaseException) -> int:
    """The exit code ``exc`` stands for, read from its class (70 for a foreign one)."""
    return exit_code_for(exc)


def _usage_message(exc: Any) -> str:
    """click's text for a usage error, unless it would echo what was typed: a bad value
    is named by its option only, an unknown command not at all."""
    if type(exc).__name__ == "MissingParameter":
        return str(exc.format_message())  # names the parameter; holds no value
    param = getattr(exc, "param", None)
    if param is not None and getattr(param, "opts", None):
        return f"invalid value for {'/'.join(param.opts)}"
    return "not a valid command line (see --help)"


def main() -> None:
    try:
        # standalone_mode=False: click *returns* a command's exit code instead of raising
        code = app(standalone_mode=False)
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        sys.exit(1)
    except (EnclaveError, LedgerError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(exit_code(exc))
    except Exception as exc:  # noqa: BLE001 - the outermost edge: no traceback, no content
        # usage errors (a missing or malformed option) are typer's own click exceptions
        if isinstance(exc, typer.TyperException) and hasattr(exc, "format_message"):
            sys.stderr.write(f"error: {_usage_message(exc)}\n")
            sys.exit(int(getattr(exc, "exit_code", 2)))
        sys.stderr.write(f"error: internal failure ({type(exc).__name__})\n")
        sys.exit(70)
