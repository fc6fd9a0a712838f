"""``serve``, ``analyst add|list|revoke|rotate``, ``policy list|load|validate|activate|retire``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from .._errors import BadInput
from ._app import HomeOption, JsonOption, command_group, open_runtime
from ._output import console, emit_json, pairs, table

__all__ = ["register_service_commands"]

analyst_app = command_group("Analysts of the service and their bearer tokens.")
policy_app = command_group("Intervention policies: draft -> validated -> active -> retired.")

VersionOption = Annotated[
    int | None,
    typer.Option("--version", min=1, max=2**31 - 1, help="Policy version (default: the highest)."),
]


def serve(
    home: HomeOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65_535, help="Port to listen on.")] = 8765,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Worker processes (each opens the home).")
    ] = 1,
    ssl_certfile: Annotated[
        Path | None, typer.Option("--ssl-certfile", help="TLS certificate chain (PEM).")
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option("--ssl-keyfile", help="TLS private key (PEM).")
    ] = None,
    max_body_bytes: Annotated[
        int,
        typer.Option(
            min=1024, max=2**30, help="Largest request body accepted (larger: 413, unread)."
        ),
    ] = 64 * 1024,
) -> None:
    """Run the HTTP service (REST under /api/v1, OpenAPI at /openapi.json)."""
    import os

    import uvicorn

    from .._home import ENV_HOME, Home, default_home
    from ..service import ENV_MAX_BODY, LOG_FORMAT, NO_DELAY_PROTOCOL, Limits

    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise BadInput("TLS needs both --ssl-certfile and --ssl-keyfile")
    if ssl_certfile is not None and ssl_keyfile is not None:
        _check_tls(ssl_certfile, ssl_keyfile)
    open_runtime(home).close()  # fail here, before listening, if the home is unusable
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    # each worker process builds the app from these (an import string, not an object)
    os.environ[ENV_HOME] = str(Home.open(home or default_home()).root.resolve())
    os.environ[ENV_MAX_BODY] = str(max_body_bytes)
    # uvicorn's own access log prints raw paths and queries (request input): ours logs
    # route templates instead. Headers are bounded by the app's gate (431) and by h11's
    # limit on a header block still arriving.
    uvicorn.run(
        "enclave.service._serve:app_from_environment",
        factory=True,
        http=NO_DELAY_PROTOCOL,
        host=host,
        port=port,
        workers=workers,
        ssl_certfile=None if ssl_certfile is None else str(ssl_certfile),
        ssl_keyfile=None if ssl_keyfile is None else str(ssl_keyfile),
        access_log=False,
        log_config=None,
        server_header=False,
        h11_max_incomplete_event_size=Limits().max_header_bytes,
    )


@analyst_app.command("add")
def analyst_add(
    name: Annotated[str, typer.Argument(help="Analyst name (lower-case).")],
    tenant: Annotated[str, typer.Option(help="The analyst's tenant.")],
    role: Annotated[
        list[str],
        typer.Option(
            "--role",
            help="viewer, auditor, restricted-clearance, legal-hold-reviewer (repeatable).",
        ),
    ],
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Create an analyst and print their bearer token — once; only its hash is kept."""
    from .._runtime import utc_now
    from ..governance import add_analyst

    with open_runtime(home) as runtime:
        analyst, token = add_analyst(runtime, name, tenant=tenant, roles=role, now=utc_now())
    if json_out:
        emit_json({**analyst.to_dict(), "token": token})
        return
    pairs(f"analyst {analyst.name}", {"tenant": analyst.tenant, "roles": ", ".join(analyst.roles)})
    console.print("bearer token (shown once, store it now):")
    console.print(token, markup=False, highlight=False)


@analyst_app.command("list")
def analyst_list(
    home: HomeOption = None,
    json_out: JsonOption = False,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
) -> None:
    """List analysts (names, tenants, roles; never tokens)."""
    from ..governance import list_analysts

    with open_runtime(home) as runtime:
        found = list_analysts(runtime, tenant=tenant)
    if json_out:
        emit_json([a.to_dict() for a in found])
    else:
        table(
            "analysts",
            ("name", "tenant", "roles", "created_at", "disabled"),
            ((a.name, a.tenant, ", ".join(a.roles), a.created_at, a.disabled) for a in found),
        )


@analyst_app.command("revoke")
def analyst_revoke(
    name: Annotated[str, typer.Argument(help="Analyst name.")],
    home: HomeOption = None,
) -> None:
    """Revoke an analyst: their token stops working at once (recorded in the ledger)."""
    from .._runtime import utc_now
    from ..governance import revoke_analyst

    with open_runtime(home) as runtime:
        revoke_analyst(runtime, name, now=utc_now())
    console.print(f"analyst {name} is revoked")


@analyst_app.command("rotate")
def analyst_rotate(
    name: Annotated[str, typer.Argument(help="Analyst name.")],
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Issue a new bearer token (shown once); the old one stops working at once."""
    from .._runtime import utc_now
    from ..governance import rotate_token

    with open_runtime(home) as runtime:
        token = rotate_token(runtime, name, now=utc_now())
    if json_out:
        emit_json({"name": name, "token": token})
        return
    console.print(f"new bearer token for {name} (shown once, store it now):")
    console.print(token, markup=False, highlight=False)


@policy_app.command("list")
def policy_list(
    home: HomeOption = None,
    json_out: JsonOption = False,
    status: Annotated[str | None, typer.Option(help="draft, validated, active or retired.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
) -> None:
    """List intervention policies."""
    from ..governance import PolicyStatus, list_policies

    try:
        wanted = None if status is None else PolicyStatus(status)
    except ValueError:
        raise BadInput("--status must be draft, validated, active or retired") from None
    with open_runtime(home) as runtime:
        found = list_policies(runtime, status=wanted, tenant=tenant)
    if json_out:
        emit_json([p.to_dict() for p in found])
    else:
        table(
            "intervention policies",
            ("id", "version", "tenant", "tool", "field", "strategy", "status"),
            (
                (p.id, p.version, p.tenant, p.tool, p.field, p.strategy.value, p.status.value)
                for p in found
            ),
        )


@policy_app.command("load")
def policy_load(
    files: Annotated[list[Path], typer.Argument(help="Policy TOML files (loaded as drafts).")],
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Load policy files as drafts (the same id and version again needs identical bytes)."""
    from .._runtime import utc_now
    from ..governance import load_policy_file

    with open_runtime(home) as runtime:
        loaded = [load_policy_file(runtime, path, now=utc_now()) for path in files]
    if json_out:
        emit_json([p.to_dict() for p in loaded])
    else:
        table(
            "loaded policies",
            ("id", "version", "status", "source_digest"),
            ((p.id, p.version, p.status.value, p.source_digest[:23]) for p in loaded),
        )


@policy_app.command("validate")
def policy_validate(
    policy_id: Annotated[str, typer.Argument(help="Policy id.")],
    version: VersionOption = None,
    specimen: Annotated[
        str | None,
        typer.Option(
            "--specimen",
            help="Preview the counterfactuals on this specimen (digests and schema validity only).",
        ),
    ] = None,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Check a policy against its tool's declared schema; a draft that passes is validated."""
    from .._runtime import utc_now
    from ..governance import validate_policy

    with open_runtime(home) as runtime:
        report = validate_policy(runtime, policy_id, version, now=utc_now(), specimen_id=specimen)
    if json_out:
        emit_json(report.to_dict())
    else:
        pairs(
            f"policy {report.policy.label}",
            {
                "result": "valid" if report.ok else "INVALID",
                "status": report.policy.status.value,
                "problems": ", ".join(report.problems) or "-",
            },
        )
        if report.preview is not None:
            table(
                f"preview on {report.preview.specimen_id}",
                ("parameter", "call", "ok", "code", "schema valid", "counterfactual digest"),
                (
                    (
                        p.label,
                        p.call_id,
                        p.ok,
                        p.code or "",
                        p.schema_valid,
                        (p.counterfactual_digest or "")[:28],
                    )
                    for p in report.preview.parameters
                ),
            )
    if not report.ok:
        raise typer.Exit(1)


@policy_app.command("activate")
def policy_activate(
    policy_id: Annotated[str, typer.Argument(help="Policy id.")],
    version: VersionOption = None,
    home: HomeOption = None,
) -> None:
    """Activate a validated policy (other active versions of the same id retire)."""
    from .._runtime import utc_now
    from ..governance import activate_policy

    with open_runtime(home) as runtime:
        policy = activate_policy(runtime, policy_id, version, now=utc_now())
    console.print(f"policy {policy.label} is active")


@policy_app.command("retire")
def policy_retire(
    policy_id: Annotated[str, typer.Argument(help="Policy id.")],
    version: VersionOption = None,
    home: HomeOption = None,
) -> None:
    """Retire a policy (final)."""
    from .._runtime import utc_now
    from ..governance import retire_policy

    with open_runtime(home) as runtime:
        policy = retire_policy(runtime, policy_id, version, now=utc_now())
    console.print(f"policy {policy.label} is retired")


def register_service_commands(app: typer.Typer) -> None:
    """Add the service's commands to ``app``: ``serve``, ``analyst ...``, ``policy ...``."""
    app.command("serve")(serve)
    app.add_typer(analyst_app, name="analyst")
    app.add_typer(policy_app, name="policy")


def _check_tls(certfile: Path, keyfile: Path) -> None:
    """Load the pair as the server will, so a bad one is refused before listening."""
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except OSError:  # ssl.SSLError included: not PEM, not a pair, a folder, unreadable
        raise BadInput("the TLS certificate and key cannot be loaded as a pair") from None
