"""``replay-enclave worker``: claim and run audit jobs from the shared database.

Any number of workers on any number of hosts may run against one database (the
``REPLAY_ENCLAVE_LEDGER_URL`` or the home's ``[ledger] url``). SIGTERM or SIGINT stops
a worker between jobs; a worker that dies mid-job loses its lease and another worker
takes the job over.

In Vault mode a worker holds no Vault credential: it asks the service for each job's
grant (``--grant-service`` / ``REPLAY_ENCLAVE_GRANT_SERVICE``) with a worker token from
``replay-enclave workers add`` — read from ``REPLAY_ENCLAVE_WORKER_TOKEN`` or from a
file only its owner can read (``REPLAY_ENCLAVE_WORKER_TOKEN_FILE`` / ``--worker-token-file``),
never from the command line (``ps`` shows every command line). Its leases are named
``<worker name>/<host:pid>``, the name the service checks them against.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import stat
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._errors import BadInput
from .._home import Home, default_home
from ._app import HomeOption, JsonOption, command_group, open_runtime
from ._output import console, emit_json, pairs

if TYPE_CHECKING:
    from ..keys import ServiceGrants

__all__ = ["register", "worker", "worker_token_app"]

ENV_GRANT_SERVICE = "REPLAY_ENCLAVE_GRANT_SERVICE"
ENV_WORKER_TOKEN = "REPLAY_ENCLAVE_WORKER_TOKEN"  # noqa: S105 - a variable's name
ENV_WORKER_TOKEN_FILE = "REPLAY_ENCLAVE_WORKER_TOKEN_FILE"  # noqa: S105 - a variable's name

worker_token_app = command_group("Replay workers' tokens for the grant service (Vault mode).")


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    log = logging.getLogger("enclave.jobs")
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def _read_token(env: Mapping[str, str], token_file: Path | None) -> str:
    """The worker token: from the environment, else from a file only its owner reads."""
    if env.get(ENV_WORKER_TOKEN):
        return env[ENV_WORKER_TOKEN].strip()
    path = token_file or (
        Path(env[ENV_WORKER_TOKEN_FILE]) if env.get(ENV_WORKER_TOKEN_FILE) else None
    )
    if path is None:
        raise BadInput(
            f"in Vault mode a worker needs a worker token ({ENV_WORKER_TOKEN} or "
            f"{ENV_WORKER_TOKEN_FILE}; see `replay-enclave workers add`)"
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        raise BadInput("the worker token file cannot be read") from None
    with os.fdopen(fd, encoding="utf-8") as handle:
        if stat.S_IMODE(os.fstat(handle.fileno()).st_mode) & 0o077:
            raise BadInput("the worker token file must be readable by its owner only (0600)")
        return handle.read().strip()


def _vault_table(home: Home) -> dict[str, Any]:
    table = home.config.get("vault", {})
    return dict(table) if isinstance(table, dict) else {}


def service_grants(home: Home, env: Mapping[str, str], url: str, token: str) -> ServiceGrants:
    """The worker's grant source: the service mints, the worker redeems (no credential)."""
    from ..keys import ServiceGrants

    table = _vault_table(home)

    def pick(name: str, key: str, default: str | None = None) -> str | None:
        value = env.get(name) or table.get(key)
        return str(value) if value else default

    addr = pick("VAULT_ADDR", "addr") or home.backend.get("vault_addr")
    if not addr:
        raise BadInput("no vault address: set VAULT_ADDR or [vault] addr")
    verify: bool | str = pick("VAULT_CACERT", "ca_cert") or True
    skip = pick("VAULT_SKIP_VERIFY", "skip_verify", "")
    if skip and skip.strip().lower() not in {"0", "false", "no", "off"}:
        verify = False
    try:
        return ServiceGrants(
            service_url=url,
            worker_token=token,
            vault_addr=addr.rstrip("/"),
            mount=pick("REPLAY_ENCLAVE_VAULT_MOUNT", "mount", "transit") or "transit",
            key_prefix=pick("REPLAY_ENCLAVE_VAULT_KEY_PREFIX", "key_prefix", "replay-enclave-")
            or "replay-enclave-",
            verify=verify,
        )
    except ValueError:
        raise BadInput("the grant service URL or the Vault address is malformed") from None


def worker(
    concurrency: Annotated[
        int, typer.Option(min=1, max=64, help="Jobs run at once (threads).")
    ] = 1,
    home: HomeOption = None,
    once: Annotated[bool, typer.Option("--once", help="Exit when no job is available.")] = False,
    lease_seconds: Annotated[
        int, typer.Option(min=1, max=86_400, help="Job lease; heartbeats renew it.")
    ] = 60,
    poll_seconds: Annotated[
        float, typer.Option(min=0.01, max=3_600.0, help="Wait between empty polls.")
    ] = 0.5,
    isolation: Annotated[
        str,
        typer.Option(help="auto | bwrap | UNSAFE_development (no enclave: for development only)."),
    ] = "auto",
    worker_id: Annotated[str | None, typer.Option(help="Name in leases (host:pid).")] = None,
    zygote: Annotated[
        bool,
        typer.Option(
            "--zygote/--no-zygote",
            help="Fork each job's sandboxed worker from a pre-imported zygote (per thread) "
            "instead of starting an interpreter per job.",
        ),
    ] = True,
    grant_service: Annotated[
        str | None,
        typer.Option(
            envvar=ENV_GRANT_SERVICE,
            help="Vault mode: the service that mints this worker's grants (its base URL).",
        ),
    ] = None,
    worker_token_file: Annotated[
        Path | None,
        typer.Option(
            envvar=ENV_WORKER_TOKEN_FILE,
            help=f"Vault mode: a 0600 file holding the worker token (or set {ENV_WORKER_TOKEN}).",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Claim and run audit jobs (prepare, replay batches, finalize) until stopped."""
    root: Path = home or default_home()
    from .._runtime import Runtime
    from ..jobs import run_worker

    if not math.isfinite(poll_seconds):  # NaN passes a range check
        raise BadInput("--poll-seconds must be a number of seconds")
    opened = Home.open(root)  # refuse a folder that is not a home before starting threads
    env = dict(os.environ)
    name = worker_id or f"{socket.gethostname()}:{os.getpid()}"
    if opened.key_provider(env) == "transit":
        # no Vault identity in this process: each grant comes from the service
        from ..keys import DigestKeys
        from ..service import worker_name_of

        if not grant_service:
            raise BadInput(
                f"in Vault mode a worker asks the service for grants: set {ENV_GRANT_SERVICE}"
            )
        token = _read_token(env, worker_token_file)
        worker_name = worker_name_of(token)
        if worker_name is None:
            raise BadInput("the worker token is malformed")
        grants = service_grants(opened, env, grant_service, token)
        name = f"{worker_name}/{name}"

        def factory() -> Runtime:
            runtime = Runtime.open(
                Home.open(root), env=env, grant_source=grants, vault_identities=False
            )
            # digest keys come from the service per job: never key digests with a secret
            # minted on this host
            runtime.digests = DigestKeys(keys_dir=runtime.home.keys_dir, mint=False)
            return runtime
    else:

        def factory() -> Runtime:
            return Runtime.open(Home.open(root))

    stop = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    _logging()
    try:
        stats = run_worker(
            factory,
            worker_id=name,
            concurrency=concurrency,
            stop=stop,
            lease_seconds=lease_seconds,
            poll_seconds=poll_seconds,
            once=once,
            isolation=isolation,
            zygote=zygote,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if json_out:
        emit_json({"worker_id": name, **stats.to_dict()})
    else:
        pairs("worker stopped", {"worker": name, **stats.to_dict()})


@worker_token_app.command("add")
def worker_token_add(
    name: Annotated[str, typer.Argument(help="Worker name (lower-case); its leases carry it.")],
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Register a replay worker and print its token — once; only its hash is kept."""
    from .._runtime import utc_now
    from ..service import add_worker

    with open_runtime(home) as runtime:
        token = add_worker(runtime, name, now=utc_now())
    if json_out:
        emit_json({"name": name, "token": token})
        return
    console.print("worker token (shown once; give it to the worker in a 0600 file):")
    console.print(token, markup=False, highlight=False)


@worker_token_app.command("revoke")
def worker_token_revoke(
    name: Annotated[str, typer.Argument(help="Worker name.")],
    home: HomeOption = None,
) -> None:
    """Revoke a worker's token for good (its next grant request is refused)."""
    from .._runtime import utc_now
    from ..service import revoke_worker

    with open_runtime(home) as runtime:
        revoke_worker(runtime, name, now=utc_now())
    pairs("worker token revoked", {"worker": name})


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
    app.add_typer(worker_token_app, name="workers")
