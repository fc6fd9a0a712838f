"""``payloads migrate``: move a home's payload ciphertext between its folder and the
ledger's database (``enclave.store._migrate`` holds the steps and their guarantees)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from .._errors import BadInput
from .._home import ENV_PAYLOAD_STORE, PAYLOAD_STORES, Home, default_home
from ._app import HomeOption, JsonOption, command_group
from ._output import console, emit_json, rich_console

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..store import PayloadBackend

payloads_app = command_group(
    "Payload ciphertext: move it between the home's files and the database."
)


def _stores(runtime: Runtime) -> dict[str, PayloadBackend]:
    from ..store import DatabasePayloadStore, PayloadStore

    return {
        "files": PayloadStore(root=runtime.home.payloads_dir),
        "database": DatabasePayloadStore(engine=runtime.ledger.engine),
    }


def erased_specimens(runtime: Runtime) -> set[str]:
    """Ids of the specimens the ledger records as erased."""
    import sqlalchemy as sa

    from ledger.tables import SpecimenRow, table_of
    from ledger.transactions import read

    specimens = table_of(SpecimenRow)
    with read(runtime.ledger.engine, operation="payloads_migrate") as conn:
        rows = conn.execute(sa.select(specimens.c.id).where(specimens.c.erased.is_(True)))
        return {str(row[0]) for row in rows}


@payloads_app.command("migrate")
def payloads_migrate(
    to: Annotated[str, typer.Option("--to", help="Where the payloads go: files or database.")],
    home: HomeOption = None,
    sole_home: Annotated[
        bool,
        typer.Option(
            "--sole-home",
            help="With --to files: no other home uses this ledger database (every "
            "specimen's payloads leave the database for this home's folder).",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Move every specimen's wrapped key, ciphertext and sealed inference answers to the
    other store, verify each copy frame by frame and answer by answer (nothing is
    decrypted), re-bind the home, then remove the old copies. Safe to re-run after an
    interruption."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .._runtime import Runtime
    from ..store import migrate, moving_payloads

    if to not in PAYLOAD_STORES:
        raise BadInput("--to must be 'files' or 'database'")
    if to == "files" and not sole_home:
        # the database's payloads are every sharing home's: moving them out takes them
        # from the others (their reads fail) — only the operator knows there are none
        raise BadInput(
            "moving payloads out of the database takes them from every home sharing it: "
            "pass --sole-home if this home is the only one"
        )
    place = Home.open(home or default_home())
    # the store asked for is the one being moved to: open the one the home is bound to
    env = {k: v for k, v in os.environ.items() if k != ENV_PAYLOAD_STORE}
    with (
        moving_payloads(place.root),
        Runtime.open(place, env=env, payloads_as_bound=True) as runtime,
    ):
        bound = place.bound_payloads()
        source = "database" if to == "files" else "files"
        stores = _stores(runtime)
        erased = erased_specimens(runtime)
        out = rich_console()
        with Progress(
            TextColumn(f"payloads -> {to}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=out,
            transient=True,
            disable=json_out or not out.is_terminal,
        ) as bar:
            task = bar.add_task("specimens", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            summary = migrate(
                stores[source],
                stores[to],
                names=(source, to),
                bound_to_target=bound == to,
                switch=lambda: place.rebind_payloads(to),
                erased=erased.__contains__,
                progress=advance,
            )
    if json_out:
        emit_json(summary.to_dict())
        return
    console.print(
        f"payloads are in {to}: {summary.copied} specimen(s) copied, "
        f"{summary.already_copied} already there, {summary.frames} frame(s) verified, "
        f"{summary.removed} old copy(ies) removed from {source}"
        + (f"; {summary.answers} inference answer(s) verified" if summary.answers else "")
        + (f"; {summary.unsealed} never sealed" if summary.unsealed else "")
    )
