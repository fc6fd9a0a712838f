"""``specimens erase``, ``keys rotate|rewrap|trim`` and ``retention sweep|retire``:
retention and key lifecycle."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .._errors import BadInput
from ._app import HomeOption, JsonOption, command_group, exit_code, open_runtime
from ._capture_cmds import specimens_app
from ._output import console, emit_json, rich_console, table

keys_app = command_group("Key lifecycle: rotate, rewrap, trim.")
retention_app = command_group(
    "Retention: sweep out expired specimens, retire specimens from the library."
)

TenantOption = Annotated[str, typer.Option(help="Tenant whose key-encryption key to operate on.")]


@specimens_app.command("erase")
def specimens_erase(
    specimen_id: Annotated[str, typer.Argument(help="Specimen id.")],
    home: HomeOption = None,
) -> None:
    """Crypto-shred one specimen: its wrapped data key and ciphertext are destroyed;
    the ledger keeps its digests and records the erasure."""
    from .._erasure import erase_specimen
    from .._runtime import utc_now

    with open_runtime(home) as runtime:
        index = erase_specimen(runtime, specimen_id, now=utc_now())
    console.print(f"erased {specimen_id}; erasure recorded at ledger entry {index}")


@keys_app.command("rotate")
def keys_rotate(tenant: TenantOption, home: HomeOption = None) -> None:
    """Add a KEK version; new specimens use it, old ones stay readable."""
    from ..store import validate_id

    validate_id(tenant, what="tenant id")
    with open_runtime(home) as runtime:
        version = runtime.rotator.rotate(tenant)
    console.print(f"tenant {tenant}: key-encryption key now at version {version}")


@keys_app.command("rewrap")
def keys_rewrap(tenant: TenantOption, home: HomeOption = None) -> None:
    """Re-wrap every specimen's data key under the newest KEK version."""
    from .._erasure import rewrap_tenant
    from ..store import validate_id

    validate_id(tenant, what="tenant id")
    with open_runtime(home) as runtime:
        count = rewrap_tenant(runtime, tenant)
    console.print(f"tenant {tenant}: re-wrapped {count} specimen key(s)")


@keys_app.command("trim")
def keys_trim(
    tenant: TenantOption,
    keep_from: Annotated[
        int,
        typer.Option(
            min=1, max=2**31 - 1, help="Oldest KEK version to keep; older ones are destroyed."
        ),
    ],
    home: HomeOption = None,
) -> None:
    """Destroy KEK versions below KEEP_FROM: data keys still wrapped by them are gone."""
    from ..store import validate_id

    validate_id(tenant, what="tenant id")
    if keep_from < 1:
        raise BadInput("--keep-from must be at least 1")
    with open_runtime(home) as runtime:
        runtime.rotator.trim_versions(tenant, keep_from=keep_from)
    console.print(f"tenant {tenant}: versions below {keep_from} destroyed")


@retention_app.command("sweep")
def retention_sweep(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be erased; change nothing.")
    ] = False,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Crypto-shred every specimen whose retention period ([retention] in config.toml)
    has run out; library members and specimens under legal hold are kept."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .._retention import RetentionPolicy, SweepStopped, sweep
    from .._runtime import utc_now

    with open_runtime(home) as runtime:
        policy = RetentionPolicy.from_config(runtime.home.config)
        with Progress(
            TextColumn("retention sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            console=rich_console(),
            transient=True,
            disable=json_out or not rich_console().is_terminal,
        ) as bar:
            task = bar.add_task("specimens", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            try:
                result = sweep(runtime, policy, now=utc_now(), dry_run=dry_run, progress=advance)
            except SweepStopped as stopped:
                sys.stderr.write(f"error: {stopped}\n")
                raise typer.Exit(exit_code(stopped.cause)) from None
    if json_out:
        emit_json(result.to_dict())
        return
    counts = result.counts()
    table(
        "retention sweep (dry run: nothing changed)" if dry_run else "retention sweep",
        (
            "would erase" if dry_run else "erased",
            "kept (library)",
            "kept (legal hold)",
            "not expired",
            "would finish" if dry_run else "finished",
        ),
        [
            (
                counts["erased"],
                counts["kept_library"],
                counts["kept_legal_hold"],
                counts["not_expired"],
                counts["finished"],
            )
        ],
    )
    if result.ledger_index is not None:
        console.print(f"recorded at ledger entry {result.ledger_index}")


@retention_app.command("retire")
def retention_retire(
    specimen_id: Annotated[str, typer.Argument(help="Specimen id.")],
    reason: Annotated[
        str, typer.Option("--reason", help="Reason code (a-z 0-9 . _ -), recorded in the ledger.")
    ] = "retired",
    home: HomeOption = None,
) -> None:
    """Take a specimen out of the library (every tag removed, library.retired recorded);
    its sealed retention class applies again."""
    from .._retention import retire_specimen

    with open_runtime(home) as runtime:
        removed = retire_specimen(runtime, specimen_id, reason=reason)
    console.print(f"retired {specimen_id} from the library (untagged: {', '.join(removed)})")
