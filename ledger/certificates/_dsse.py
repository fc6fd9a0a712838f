"""DSSE v1 (Dead Simple Signing Envelope) with Ed25519.

Spec: https://github.com/secure-systems-lab/dsse (protocol.md, envelope.md).

Invariants:

1. Signatures cover ``PAE(UTF8(payloadType), payload)`` — never the payload alone —
   so a payload cannot be re-labelled with another type.
2. Base64 input may use the standard or the URL-safe alphabet (the spec requires
   both) but must be the canonical encoding of its bytes: non-zero padding bits and
   stray characters are refused, so two different strings never carry one payload.
3. ``keyid`` is an unauthenticated hint; it only narrows which trusted keys are tried.
   A threshold counts distinct trusted keys, never signatures.
4. Verification fails with one opaque ``CertificateInvalid``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._errors import BadCertificateInput, CertificateInvalid
from ._keys import Signer

__all__ = ["IN_TOTO_PAYLOAD_TYPE", "DsseSignature", "Envelope", "pae", "sign_dsse", "verify_dsse"]

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_SIGNATURES = 16
MAX_PAYLOAD_CHARS = 8 * 1024 * 1024


def pae(payload_type: str, payload: bytes) -> bytes:
    """Pre-Authentication Encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def _b64encode(data: bytes) -> str:
    return base64.standard_b64encode(data).decode("ascii")


def _b64decode(text: object) -> bytes:
    """Standard or URL-safe base64, canonical form only (padding optional)."""
    if not isinstance(text, str) or not text.isascii():
        raise BadCertificateInput("DSSE envelope malformed")
    for alphabet in (None, b"-_"):
        try:
            padded = text + "=" * (-len(text) % 4) if "=" not in text else text
            data = base64.b64decode(padded, altchars=alphabet, validate=True)
        except (binascii.Error, ValueError):
            continue
        again = base64.b64encode(data, altchars=alphabet).decode("ascii")
        if again == text or again.rstrip("=") == text:
            return data
    raise BadCertificateInput("DSSE envelope malformed")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form
        return False
    return True


@dataclass(frozen=True, slots=True)
class DsseSignature:
    sig: bytes
    keyid: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {"sig": _b64encode(self.sig)}
        if self.keyid is not None:
            out["keyid"] = self.keyid
        return out


@dataclass(frozen=True, slots=True)
class Envelope:
    """A parsed DSSE envelope. ``from_dict`` refuses anything outside the spec's shape."""

    payload: bytes
    payload_type: str
    signatures: tuple[DsseSignature, ...]

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload)

    def to_dict(self) -> dict[str, Any]:
        return {
            "payload": _b64encode(self.payload),
            "payloadType": self.payload_type,
            "signatures": [s.to_dict() for s in self.signatures],
        }

    @classmethod
    def from_dict(cls, data: object) -> Envelope:
        """Parse the JSON envelope; ``BadCertificateInput`` (no detail) on any deviation."""
        if not isinstance(data, Mapping) or set(data) != {"payload", "payloadType", "signatures"}:
            raise BadCertificateInput("DSSE envelope malformed")
        payload_text, payload_type, sigs = data["payload"], data["payloadType"], data["signatures"]
        if not isinstance(payload_text, str) or len(payload_text) > MAX_PAYLOAD_CHARS:
            raise BadCertificateInput("DSSE envelope malformed")
        if not isinstance(payload_type, str) or not _is_utf8(payload_type):
            raise BadCertificateInput("DSSE envelope malformed")
        if not isinstance(sigs, list) or not 1 <= len(sigs) <= MAX_SIGNATURES:
            raise BadCertificateInput("DSSE envelope malformed")
        signatures = []
        for item in sigs:
            if (
                not isinstance(item, Mapping)
                or not set(item) <= {"sig", "keyid"}
                or "sig" not in item
            ):
                raise BadCertificateInput("DSSE envelope malformed")
            keyid = item.get("keyid")
            if keyid is not None and not (isinstance(keyid, str) and _is_utf8(keyid)):
                raise BadCertificateInput("DSSE envelope malformed")
            signatures.append(DsseSignature(sig=_b64decode(item["sig"]), keyid=keyid))
        return cls(
            payload=_b64decode(payload_text),
            payload_type=payload_type,
            signatures=tuple(signatures),
        )


def sign_dsse(payload: bytes, payload_type: str, key: Signer) -> Envelope:
    """One-signature envelope over ``PAE(payload_type, payload)``."""
    sig = key.sign(pae(payload_type, payload))
    return Envelope(
        payload=payload,
        payload_type=payload_type,
        signatures=(DsseSignature(sig=sig, keyid=key.keyid),),
    )


def verify_dsse(
    envelope: Envelope,
    public_keys: Mapping[str, Ed25519PublicKey],
    *,
    threshold: int = 1,
) -> frozenset[str]:
    """Keyids of the distinct trusted keys whose signature verifies; at least
    ``threshold`` of them or ``CertificateInvalid``. The payload type is not judged
    here: callers refuse types they do not support."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    message = envelope.pae()
    accepted: set[str] = set()
    for signature in envelope.signatures:
        if signature.keyid is not None:
            candidates = [signature.keyid] if signature.keyid in public_keys else []
        else:
            candidates = [k for k in public_keys if k not in accepted]
        for keyid in candidates:
            if keyid in accepted:
                continue
            try:
                public_keys[keyid].verify(signature.sig, message)
            except InvalidSignature:
                continue
            accepted.add(keyid)
            break
    if len(accepted) < threshold:
        raise CertificateInvalid()
    return frozenset(accepted)
