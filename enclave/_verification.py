"""Verifying a certificate against this home: its issuer key and its ledger."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import BadInput

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ledger.certificates import VerificationReport

    from ._runtime import Runtime

__all__ = ["issuer_key", "verify"]


def issuer_key(runtime: Runtime, path: Path | None = None) -> Ed25519PublicKey:
    """The issuer public key in the PEM file ``path`` (default: the home's own)."""
    from ledger.certificates import load_public_key_pem

    key_path = path or Path(f"{runtime.home.signing_key_path}.pub")
    try:
        data = key_path.read_bytes()
    except FileNotFoundError:
        raise BadInput("issuer public key not found") from None
    except OSError:
        raise BadInput("issuer public key cannot be read") from None
    return load_public_key_pem(data)


def verify(
    runtime: Runtime,
    envelope: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey | None = None,
) -> VerificationReport:
    """Verify a certificate: envelope, signature, statement, predicate schema and rules,
    and its linkage to this home's ledger, each check named in the report.

    ``public_key`` defaults to the home's issuer key. A certificate that fails a check
    is a report with ``ok`` false, not an exception::

        report = enclave.verify(runtime, outcome.envelope)
        assert report.ok, [c.name for c in report.checks if not c.ok]
    """
    from ledger.certificates import verify_certificate

    from .replay.certificates import RuntimeLedgerLookup

    key = public_key if public_key is not None else issuer_key(runtime)
    return verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
