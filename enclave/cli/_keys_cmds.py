"""``specimens erase`` and ``keys rotate|rewrap|trim``: retention and key lifecycle."""

from __future__ import annotations

from typing import Annotated

import typer

from .._errors import BadInput
from ._app import HomeOption, command_group, open_runtime
from ._capture_cmds import specimens_app
from ._output import console

keys_app = command_group("Key lifecycle: rotate, rewrap, trim.")

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
        int, typer.Option(help="Oldest KEK version to keep; older ones are destroyed.")
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
