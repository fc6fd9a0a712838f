"""Verifying a certificate against this home (its issuer key and its ledger), or a
bundle offline (the issuer key and the log's verifier key, no ledger)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import BadInput

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ledger.certificates import VerificationReport
    from ledger.certificates.tlog import NoteVerifier, WitnessVerifier

    from ._runtime import Runtime

__all__ = ["issuer_key", "log_verifier", "verify", "verify_offline", "witness_keys"]


def issuer_key(runtime: Runtime | None, path: Path | None = None) -> Ed25519PublicKey:
    """The issuer public key in the PEM file ``path`` (default: the home's own)."""
    from ledger.certificates import load_public_key_pem

    from ._issuer_key import issuer_public_path

    if path is not None:
        key_path = path
    elif runtime is not None:
        key_path = issuer_public_path(runtime.home)
    else:
        raise BadInput("no issuer public key given")
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


def log_verifier(runtime: Runtime | None, given: str | None = None) -> NoteVerifier:
    """The log's verifier key: ``given`` (a C2SP verifier key, as ``ledger checkpoint
    --public-key`` prints it) or the home's own log key."""
    from ledger.certificates.tlog import NoteInvalid, NoteVerifier

    from ._log_key import LogKey

    if given is None:
        if runtime is None:
            raise BadInput("no log verifier key given")
        return LogKey.of(runtime, create=False).verifier
    try:
        return NoteVerifier.parse(given.strip())
    except NoteInvalid:
        raise BadInput("the log key is not a C2SP Ed25519 verifier key") from None


def witness_keys(given: Sequence[str], quorum: int | None) -> list[WitnessVerifier]:
    """Witnesses' C2SP cosigner keys (``<name>+<id>+base64(0x04 ‖ key)``), distinct,
    with a quorum no larger than their number."""
    from ledger.certificates.tlog import NoteInvalid, WitnessVerifier

    try:
        parsed = {v.encode(): v for v in (WitnessVerifier.parse(k.strip()) for k in given)}
    except NoteInvalid:
        raise BadInput("a witness key is not a C2SP Ed25519 cosigner key") from None
    keys = list(parsed.values())
    if quorum is not None and not 1 <= quorum <= len(keys):
        raise BadInput("--quorum is 1 to the number of --witness keys")
    return keys


def verify_offline(
    bundle: Mapping[str, Any],
    public_key: Ed25519PublicKey,
    log_key: NoteVerifier,
    *,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> VerificationReport:
    """Verify a certificate bundle with the issuer's key and the log's key alone: the
    envelope as ``verify`` does, then its entries proven in the log's signed checkpoint
    instead of looked up (``ledger.certificates.verify_bundle``); with ``witnesses``,
    the checkpoint must carry ``quorum`` (default: all) of their cosignatures."""
    from ledger.certificates import verify_bundle

    return verify_bundle(
        bundle, public_key=public_key, log_key=log_key, witnesses=witnesses, quorum=quorum
    )
