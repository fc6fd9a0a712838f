"""Asking the log's witnesses to cosign its latest checkpoint (C2SP tlog-witness).

The witnesses are configuration, in the home's ``config.toml``::

    [[ledger.witnesses]]
    url = "https://witness.example/"        # its submission prefix
    key = "witness.example/w1+1a2b3c4d+BA…"  # its C2SP vkey (0x04: an Ed25519 cosigner)

Each is sent ``add-checkpoint`` from the size it says it last cosigned (a first request
from 0; a 409 names the size to prove from); a cosignature that verifies with its key
is kept with the checkpoint (``Ledger.add_cosignatures``), so the bundles proven
against it carry it. A witness that refuses, or answers what does not verify, is
named with its HTTP status; nothing it sent is kept.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import BadInput

if TYPE_CHECKING:
    from ledger import Ledger
    from ledger.certificates.tlog import WitnessVerifier

    from ._home import Home
    from ._log_key import LogKey

__all__ = ["Witness", "configured_witnesses", "request_cosignatures"]

_TIMEOUT = 10.0


@dataclass(frozen=True)
class Witness:
    url: str
    key: WitnessVerifier


def configured_witnesses(home: Home) -> list[Witness]:
    """The home's ``[[ledger.witnesses]]``, each a submission URL and a vkey."""
    from ledger.certificates.tlog import NoteInvalid, WitnessVerifier

    table = home.config.get("ledger", {})
    listed: Any = table.get("witnesses", []) if isinstance(table, dict) else []
    if not isinstance(listed, list):
        raise BadInput("[[ledger.witnesses]] in config.toml is a list of tables")
    witnesses = []
    for entry in listed:
        url = entry.get("url") if isinstance(entry, dict) else None
        key = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise BadInput("a witness in config.toml has an http(s) url")
        try:
            verifier = WitnessVerifier.parse(key if isinstance(key, str) else "")
        except NoteInvalid:
            raise BadInput("a witness in config.toml has a C2SP Ed25519 cosigner key") from None
        witnesses.append(Witness(url=url.rstrip("/"), key=verifier))
    return witnesses


def _body(ledger: Ledger, old: int, size: int, note: str) -> bytes:
    proof = ledger.prove_consistency(old, size) if 0 < old < size else []
    lines = "".join(base64.b64encode(h).decode() + "\n" for h in proof)
    return f"old {old}\n{lines}\n{note}".encode()


def _ask(ledger: Ledger, witness: Witness, size: int, note: str) -> tuple[str | None, str]:
    """(the cosignature lines, or None; what happened, in a few words)."""
    import httpx

    from ledger.certificates.tlog import NoteInvalid, cosigned_by

    old = 0
    try:
        with httpx.Client(timeout=_TIMEOUT) as client:
            for _ in range(2):  # from 0, then from the size a 409 names
                answer = client.post(
                    f"{witness.url}/add-checkpoint", content=_body(ledger, old, size, note)
                )
                stale = answer.headers.get("content-type", "").startswith("text/x.tlog.size")
                if answer.status_code != 409 or not stale:
                    break
                said = answer.text.strip()
                if not said.isdigit() or int(said) > size or int(said) == old:
                    break
                old = int(said)
    except httpx.HTTPError:
        return None, "unreachable"
    if answer.status_code != 200:
        return None, f"refused ({answer.status_code})"
    lines = answer.text
    try:
        if witness.key not in cosigned_by(note + lines, [witness.key]):
            return None, "answered without its cosignature"
    except NoteInvalid:
        return None, "answered a cosignature that does not verify"
    own = "".join(
        line + "\n" for line in lines.splitlines() if line.split(" ")[1:2] == [witness.key.name]
    )
    return own, "cosigned"


def request_cosignatures(
    ledger: Ledger, log: LogKey, witnesses: Sequence[Witness], size: int, note: str
) -> tuple[dict[str, str], str]:
    """Ask each witness to cosign the checkpoint ``note`` of ``size`` entries; keep the
    cosignatures that verify. Returns each witness's name and what happened, and the
    note with the cosignatures kept."""
    outcome = {}
    for witness in witnesses:
        lines, said = _ask(ledger, witness, size, note)
        if lines is not None:
            note = ledger.add_cosignatures(size, lines, signer=log.verifier)
        outcome[witness.key.name] = said
    return outcome, note
