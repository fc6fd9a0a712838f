"""The log's signing identity: the key that signs the ledger's checkpoints.

A local Ed25519 key in the home (``keys/log-key.pem``, created 0600 on first use, its
public half beside it), kept apart from the certificate issuer's key: a checkpoint
vouches for the whole log, a certificate for one audit. The key's name in a signed note
is the log's origin: ``[ledger] origin`` in the home's config.toml, or
``replay-enclave.invalid/<first 16 hex of the key's SHA-256>``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import BadInput

if TYPE_CHECKING:
    from collections.abc import Callable

    from ledger.certificates.tlog import NoteVerifier

    from ._home import Home

__all__ = ["LogKey"]


@dataclass(frozen=True)
class LogKey:
    origin: str
    verifier: NoteVerifier
    sign: Callable[[bytes], bytes]

    @classmethod
    def of(cls, home: Home, *, create: bool = True) -> LogKey:
        """The home's log key; without ``create``, ``BadInput`` if it has none yet (it
        has signed no checkpoint)."""
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        from ledger.certificates.tlog import NoteInvalid, NoteVerifier

        from .keys import SigningKey

        path = home.keys_dir / "log-key.pem"
        if not create and not path.is_file():
            raise BadInput("this home has signed no checkpoint")
        key = SigningKey.load_or_create(path)
        raw = key.public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
        table = home.config.get("ledger", {})
        origin = table.get("origin") if isinstance(table, dict) else None
        if origin is None:
            origin = f"replay-enclave.invalid/{hashlib.sha256(raw).hexdigest()[:16]}"
        if not isinstance(origin, str):
            raise BadInput("[ledger] origin in config.toml must be a string")
        try:
            verifier = NoteVerifier(origin, key.public_key)
            verifier.encode()  # a name a note can carry
            NoteVerifier.parse(verifier.encode())
        except NoteInvalid:
            raise BadInput("[ledger] origin must be one word with no '+'") from None
        return cls(origin=origin, verifier=verifier, sign=key.sign)
