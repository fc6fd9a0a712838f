"""The log's signing identity: the key that signs the ledger's checkpoints.

Kept apart from the certificate issuer's key: a checkpoint vouches for the whole log, a
certificate for one audit. Where it lives:

- a local home: an Ed25519 key in the home (``keys/log-key.pem``, created 0600 on first
  use, its public half beside it);
- a Vault-mode home: the transit key ``<prefix>_log`` (``enclave.keys.TransitLogKey``),
  which never leaves the key server. Its public half is pinned in the home on first use
  (``keys/log-key-transit.pub``); verifying needs only the pin, and every signature is
  checked against it before it is used, so a key rotated or replaced in transit signs
  nothing. A Vault-mode home that signed checkpoints with a local key before keeps that
  key: a log's key is its identity.

The key's name in a signed note is the log's origin: ``[ledger] origin`` in the home's
config.toml, or ``replay-enclave.invalid/<first 16 hex of the key's SHA-256>``.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import BadInput, IntegrityFailure

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

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

        home = runtime.home
        local = home.keys_dir / "log-key.pem"
        if local.is_file() or runtime.provider == "local":
            public, sign = _local_key(local, create)
        else:
            public, sign = _transit_key(runtime, home.keys_dir / "log-key-transit.pub", create)
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


Signing = tuple["Ed25519PublicKey", "Callable[[bytes], bytes]"]


def _no_checkpoint() -> BadInput:
    return BadInput("this home has signed no checkpoint")


def _local_key(path: Path, create: bool) -> Signing:
    from .keys import SigningKey

    if not create and not path.is_file():
        raise _no_checkpoint()
    key = SigningKey.load_or_create(path)
    return key.public_key, key.sign


def _transit_key(runtime: Runtime, pin: Path, create: bool) -> Signing:
    from cryptography.exceptions import InvalidSignature

    from ledger.certificates import BadCertificateInput, load_public_key_pem

    key = functools.cache(runtime.transit_log_key)  # on first use: verifying needs no Vault

    if pin.is_file():
        try:
            public = load_public_key_pem(pin.read_bytes())
        except (OSError, BadCertificateInput):
            raise IntegrityFailure("the home's pinned log key cannot be read") from None
    elif not create:
        raise _no_checkpoint()
    else:
        public = key().public_key()
        _write_pin(pin, public)

    def sign(message: bytes) -> bytes:
        signature = key().sign(message)
        try:
            public.verify(signature, message)
        except InvalidSignature:
            raise IntegrityFailure(
                "the log key in transit is not the one this home pinned"
            ) from None
        return signature

    return public, sign


def _write_pin(pin: Path, public: Ed25519PublicKey) -> None:
    """Write the public half atomically (a concurrent first use writes the same bytes)."""
    import os
    import tempfile

    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from ._errors import InfrastructureError

    pem = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    try:
        pin.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=pin.parent, prefix=".log-key-transit.")
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        os.chmod(tmp, 0o644)
        os.replace(tmp, pin)
    except OSError:
        raise InfrastructureError("the log key's public half could not be written") from None
