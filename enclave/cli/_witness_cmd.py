"""``replay-enclave witness``: a minimal C2SP tlog-witness for the logs it is given.

It keeps its own state (``--state``, a SQLite file: per origin, the checkpoint it last
cosigned) and its own Ed25519 key (``--key``, a PEM file created 0600 on first use),
apart from any home: a witness is another party than the log it watches. Everything
given is checked before anything is created or served.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from .._errors import BadInput

__all__ = ["witness"]


def _writable(path: Path, what: str) -> None:
    if path.is_dir() or not path.parent.is_dir():
        raise BadInput(f"the witness's {what} file cannot be written")


def witness(
    name: Annotated[str, typer.Option(help="The witness's name (its cosignatures' key name).")],
    log: Annotated[
        list[str], typer.Option(help="A log to follow: its C2SP verifier key (repeatable).")
    ],
    state: Annotated[Path, typer.Option(help="The witness's state (a SQLite file).")],
    key: Annotated[Path, typer.Option(help="The witness's private key (PEM; created).")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65_535, help="Port to listen on.")] = 8766,
    public_key: Annotated[
        bool, typer.Option("--public-key", help="Print the witness's cosigner key and exit.")
    ] = False,
) -> None:
    """Run a witness that cosigns a log's checkpoints only when consistent."""
    from ledger.certificates.tlog import NoteInvalid, NoteVerifier, WitnessVerifier

    from ..keys import SigningKey

    if not name or not name.isprintable() or any(c.isspace() or c == "+" for c in name):
        raise BadInput("a witness name is one word with no '+'")
    try:
        logs = {v.name: v for v in (NoteVerifier.parse(text.strip()) for text in log)}
    except NoteInvalid:
        raise BadInput("a --log is not a C2SP Ed25519 verifier key") from None
    _writable(key, "key")
    if not public_key:
        _writable(state, "state")
    signing = SigningKey.load_or_create(key)
    verifier = WitnessVerifier(name, signing.public_key)
    if public_key:
        typer.echo(verifier.encode())
        return
    import uvicorn

    from ..witness import WitnessStore, create_witness_app

    store = WitnessStore(state)
    app = create_witness_app(logs=logs, witness=verifier, sign=signing.sign, store=store)
    logging.basicConfig(level=logging.INFO)
    try:
        uvicorn.run(app, host=host, port=port, access_log=False)
    finally:
        store.close()
