"""A transit signing key as a home uses it: its public half pinned on first use.

The pin (a PEM file in the home's ``keys/``) is what verifying reads, so verifying needs
no key server; and every signature transit returns is checked against the pin before it
is used, so a key rotated or replaced in transit after the pin signs nothing.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._errors import EnclaveError, InfrastructureError, IntegrityFailure

if TYPE_CHECKING:
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ._runtime import Runtime

__all__ = ["Signing", "pinned_transit_key"]

Signing = tuple["Ed25519PublicKey", Callable[[bytes], bytes]]


def pinned_transit_key(
    runtime: Runtime, name: str, pin: Path, *, missing: Callable[[], EnclaveError] | None
) -> Signing:
    """The public half (from the pin, written on first use) and a signing function of
    the transit key ``name``; ``missing``: the error when there is no pin yet and none
    may be made (None: make it)."""
    from cryptography.exceptions import InvalidSignature

    from ledger.certificates import BadCertificateInput, load_public_key_pem

    from .keys import SIGNING_KEY_NAMES

    what = SIGNING_KEY_NAMES[name]
    # on first use: verifying needs no Vault
    key = functools.cache(functools.partial(runtime.transit_signing_key, name))
    if pin.is_file():
        try:
            public = load_public_key_pem(pin.read_bytes())
        except (OSError, BadCertificateInput):
            raise IntegrityFailure(f"the home's pinned {what} cannot be read") from None
    elif missing is not None:
        raise missing()
    else:
        public = key().public_key()
        _write_pin(pin, public, what)

    def sign(message: bytes) -> bytes:
        signature = key().sign(message)
        try:
            public.verify(signature, message)
        except InvalidSignature:
            raise IntegrityFailure(
                f"the {what} in transit is not the one this home pinned"
            ) from None
        return signature

    return public, sign


def _write_pin(pin: Path, public: Ed25519PublicKey, what: str) -> None:
    """Write the public half atomically (a concurrent first use writes the same bytes)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    pem = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    try:
        pin.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=pin.parent, prefix=f".{pin.name}.")
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        os.chmod(tmp, 0o644)
        os.replace(tmp, pin)
    except OSError:
        raise InfrastructureError(f"the {what}'s public half could not be written") from None
