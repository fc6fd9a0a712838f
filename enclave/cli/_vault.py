"""``replay-enclave vault ...``: provision Vault/OpenBao and run a local dev server.

Output on stdout is only ``export NAME=value`` lines (and ``#`` comments), so
``eval "$(replay-enclave vault setup ...)"`` works. Errors go to stderr, exit code 1.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from enclave._errors import EnclaveError
from enclave._home import Home, default_home

from ._app import command_group

if TYPE_CHECKING:  # hvac and the provisioning code load with the command that uses them
    from enclave.vaultops import SetupResult

vault_app = command_group(
    "Provision Vault/OpenBao (policies, AppRole roles, tenant keys) and run a dev server."
)

TenantOpt = Annotated[
    list[str] | None,
    typer.Option("--tenant", help="Create this tenant's transit key (repeatable)."),
]
MountOpt = Annotated[str, typer.Option(help="Transit mount path.")]
PrefixOpt = Annotated[str, typer.Option(help="Prefix of tenant key names.")]


@contextmanager
def _safe_errors() -> Iterator[None]:
    try:
        yield
    except EnclaveError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def _print(result: SetupResult) -> None:
    typer.echo("# Role ids and fresh secret ids; keep them out of shell history and logs.")
    for line in result.export_lines():
        typer.echo(line)


def _write_env_file(path: Path, result: SetupResult) -> None:
    """The export lines in a file only its owner can read (created 0600, never through a
    symlink): secret ids never pass through a shell redirection's 0644 file."""
    from enclave._errors import BadInput

    text = "".join(line + "\n" for line in result.export_lines())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        raise BadInput("the env file cannot be written") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)


@vault_app.command()
def setup(
    addr: Annotated[str, typer.Option(envvar="VAULT_ADDR", help="Server address.")],
    token: Annotated[
        str,
        typer.Option(envvar="VAULT_TOKEN", help="Admin token (prefer the VAULT_TOKEN variable)."),
    ],
    tenant: TenantOpt = None,
    mount: MountOpt = "transit",
    key_prefix: PrefixOpt = "replay-enclave-",
    ca_cert: Annotated[str | None, typer.Option(envvar="VAULT_CACERT")] = None,
    no_secret_ids: Annotated[
        bool, typer.Option("--no-secret-ids", help="Print role ids only.")
    ] = False,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            help="Write the export lines to this file (mode 0600) instead of stdout.",
        ),
    ] = None,
) -> None:
    """Enable transit + AppRole, write policies and roles, create tenant keys."""
    from enclave.keys import admin_client
    from enclave.vaultops import apply_setup

    with _safe_errors():
        try:
            admin = admin_client(addr, token, verify=ca_cert or True)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        result = apply_setup(
            admin,
            mount=mount,
            key_prefix=key_prefix,
            tenants=tenant or (),
            issue_secret_ids=not no_secret_ids,
        )
        if env_file is None:
            _print(result)
        else:
            _write_env_file(env_file, result)
            typer.echo(f"# role and secret ids: {env_file} (mode 0600)")


@vault_app.command()
def dev(
    home: Annotated[
        Path | None,
        typer.Option(help="State directory (default: $REPLAY_ENCLAVE_HOME or ./.replay-enclave)."),
    ] = None,
    port: Annotated[
        int | None, typer.Option(min=1, max=65_535, help="Loopback port (default: a free one).")
    ] = None,
    tenant: TenantOpt = None,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the dev server started here.")] = False,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            help="Write the export lines to this file (mode 0600) instead of stdout.",
        ),
    ] = None,
) -> None:
    """Start a local in-memory OpenBao dev server with an audit log, then run setup."""
    from enclave.keys import admin_client
    from enclave.vaultops import apply_setup, start_dev_server, stop_dev_server

    directory = home if home is not None else default_home()
    with _safe_errors():
        if stop:
            if stop_dev_server(directory):
                typer.echo(f"# stopped the dev server recorded in {directory}")
            else:
                typer.echo(f"# no dev server recorded in {directory}")
            return
        # The dev server keeps its state in the home: make it one first, so the
        # commands that follow (`demo`, `capture`) open it as it is.
        Home.init(directory)
        server = start_dev_server(directory, root_token=secrets.token_urlsafe(24), port=port)
        try:
            result = apply_setup(admin_client(server.addr, server.root_token), tenants=tenant or ())
        except EnclaveError:
            stop_dev_server(directory)
            raise
        typer.echo(f"# OpenBao dev server pid {server.pid} at {server.addr} (in-memory)")
        typer.echo(f"# root token and state: {directory / 'vault-dev.json'} (mode 0600)")
        typer.echo(f"# audit log: {server.audit_log}")
        if env_file is None:
            _print(result)
            return
        try:
            _write_env_file(env_file, result)
        except EnclaveError:
            stop_dev_server(directory)
            raise
        typer.echo(f"# role and secret ids: {env_file} (mode 0600; load with set -a; . FILE)")
