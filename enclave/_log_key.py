"""The log's signing identity: the key that signs the ledger's checkpoints.

Kept apart from the certificate issuer's key: a checkpoint vouches for the whole log, a
certificate for one audit. Where it lives:

- a local home: an Ed25519 key in the home (``keys/log-key.pem``, created 0600 on first
  use, its public half beside it);
- a Vault-mode home: the transit key ``<prefix>_log`` (``enclave.keys.TransitSigningKey``),
  which never leaves the key server. Its public half is pinned in the home on first use
  (``keys/log-key-transit.pub``, ``enclave._pinned_transit``); verifying needs only the
  pin, and every signature is checked against it before it is used, so a key rotated or
  replaced in transit signs nothing. A Vault-mode home that signed checkpoints with a
  local key before keeps that key: a log's key is its identity.

The key's name in a signed note is the log's origin: ``[ledger] origin`` in the home's
config.toml, or ``replay-enclave.invalid/<first 16 hex of the key's SHA-256>``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import BadInput
from ._pinned_transit import Signing, pinned_transit_key

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ledger.certificates.tlog import NoteVerifier

    from ._runtime import Runtime

__all__ = ["LogKey"]


@dataclass(frozen=True)
class LogKey:
    origin: str
    verifier: NoteVerifier
    sign: Callable[[bytes], bytes]

    @classmethod
    def of(cls, runtime: Runtime, *, create: bool = True) -> LogKey:
        """The home's log key; without ``create``, ``BadInput`` if it has none yet (it
        has signed no checkpoint)."""
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        from ledger.certificates.tlog import NoteInvalid, NoteVerifier

        from .keys import LOG_KEY_NAME

        home = runtime.home
        local = home.keys_dir / "log-key.pem"
        if local.is_file() or runtime.provider == "local":
            public, sign = _local_key(local, create)
        else:
            public, sign = pinned_transit_key(
                runtime,
                LOG_KEY_NAME,
                home.keys_dir / "log-key-transit.pub",
                missing=None if create else _no_checkpoint,
            )
        raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
        table = home.config.get("ledger", {})
        origin = table.get("origin") if isinstance(table, dict) else None
        if origin is None:
            origin = f"replay-enclave.invalid/{hashlib.sha256(raw).hexdigest()[:16]}"
        if not isinstance(origin, str):
            raise BadInput("[ledger] origin in config.toml must be a string")
        try:
            verifier = NoteVerifier(origin, public)
            verifier.encode()  # a name a note can carry
            NoteVerifier.parse(verifier.encode())
        except NoteInvalid:
            raise BadInput("[ledger] origin must be one word with no '+'") from None
        return cls(origin=origin, verifier=verifier, sign=sign)


def _no_checkpoint() -> BadInput:
    return BadInput("this home has signed no checkpoint")


def _local_key(path: Path, create: bool) -> Signing:
    from .keys import SigningKey

    if not create and not path.is_file():
        raise _no_checkpoint()
    key = SigningKey.load_or_create(path)
    return key.public_key, key.sign
