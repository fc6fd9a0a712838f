"""``replay-enclave worker``: claim and run audit jobs from the shared database.

Any number of workers on any number of hosts may run against one database (the
``REPLAY_ENCLAVE_LEDGER_URL`` or the home's ``[ledger] url``). SIGTERM or SIGINT stops
a worker between jobs; a worker that dies mid-job loses its lease and another worker
takes the job over.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from .._home import Home, default_home
from ._app import HomeOption, JsonOption
from ._output import emit_json, pairs

__all__ = ["register", "worker"]


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    log = logging.getLogger("enclave.jobs")
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def worker(
    concurrency: Annotated[int, typer.Option(help="Jobs run at once (threads).")] = 1,
    home: HomeOption = None,
    once: Annotated[bool, typer.Option("--once", help="Exit when no job is available.")] = False,
    lease_seconds: Annotated[int, typer.Option(help="Job lease; heartbeats renew it.")] = 60,
    poll_seconds: Annotated[float, typer.Option(help="Wait between empty polls.")] = 0.5,
    isolation: Annotated[
        str,
        typer.Option(help="auto | bwrap | UNSAFE_development (no enclave: for development only)."),
    ] = "auto",
    worker_id: Annotated[str | None, typer.Option(help="Name in leases (host:pid).")] = None,
    json_out: JsonOption = False,
) -> None:
    """Claim and run audit jobs (prepare, replay batches, finalize) until stopped."""
    root: Path = home or default_home()
    from .._runtime import Runtime
    from ..jobs import run_worker

    Home.open(root)  # refuse a folder that is not a home before starting threads
    name = worker_id or f"{socket.gethostname()}:{os.getpid()}"
    stop = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    _logging()
    try:
        stats = run_worker(
            lambda: Runtime.open(Home.open(root)),
            worker_id=name,
            concurrency=concurrency,
            stop=stop,
            lease_seconds=lease_seconds,
            poll_seconds=poll_seconds,
            once=once,
            isolation=isolation,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if json_out:
        emit_json({"worker_id": name, **stats.to_dict()})
    else:
        pairs("worker stopped", {"worker": name, **stats.to_dict()})


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
