"""Verifying a certificate or release report file on the analyst's side, without the
enclave's code.

Steps (each yields one check; a step runs only if the earlier ones passed):

1. ``envelope``  — the file is a DSSE envelope (exactly payload, payloadType,
                   signatures; canonical base64) with type ``application/vnd.in-toto+json``.
2. ``signature`` — an Ed25519 signature over ``PAE(type, payload)`` verifies with the
                   issuer's public key (PEM, given by the reviewer).
3. ``statement`` — the payload is canonical JSON (RFC 8785): an in-toto Statement v1
                   with a certificate predicate type (v2, or v1 for certificates issued
                   before v2) and one ``specimen:<id>`` subject, or the release report
                   type and one ``release-selection`` subject with a sha256 digest;
                   and ``predicate.issuer`` is the key that verified.
4. ``predicate`` — a certificate's predicate matches its version's JSON Schema and rules,
                   as ``ledger.certificates.predicate_problems`` judges them (the browser's
                   port in ``labextension/src/predicate`` agrees); a report's has the
                   report's shape, and its selection digest, totals and gate follow from
                   its rows (``_report_shape``). A failure names the first problem as
                   ``/predicate<location>: <rule>``, never a value.
5. ``ledger``    — (only with a service client) the certificate the service recorded for
                   this audit has the same digest (sha256 of the canonical envelope), and
                   the service's own verification of it, ledger linkage included, passes;
                   for a report, the service's report of that id has the same digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.certificates import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
    VerificationCheck,
    finding,
    keyid_of,
    load_public_key_pem,
    predicate_problems,
)

from ._client import EnclaveClient
from ._errors import NOT_JSON, EnclaveClientError
from ._report_shape import REPORT_TYPE, REPORT_TYPE_V1, SUBJECT, report_problems
from ._wire import VerifyReport

__all__ = ["verify_file", "verify_envelope_offline", "envelope_digest"]

IN_TOTO = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# The versions this check knows, newest first; step 4 checks each predicate against its
# version's schema and rules.
PREDICATE_TYPES = {
    "https://replay-enclave.dev/certificate/v3": "certificate v3",
    "https://replay-enclave.dev/certificate/v2": "certificate v2",
    "https://replay-enclave.dev/certificate/v1": "certificate v1",
    REPORT_TYPE: "release report v2",
    REPORT_TYPE_V1: "release report v1",
}
REPORT_TYPES = (REPORT_TYPE, REPORT_TYPE_V1)
STEPS = ("envelope", "signature", "statement", "predicate", "ledger")


class _Failed(Exception):
    pass


def envelope_digest(envelope: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(dict(envelope))).hexdigest()


def _b64(text: object) -> bytes:
    if not isinstance(text, str) or not text.isascii():
        raise _Failed("not a DSSE envelope (base64)")
    for alt in (None, b"-_"):
        padded = text if "=" in text else text + "=" * (-len(text) % 4)
        try:
            data = base64.b64decode(padded, altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            continue
        again = base64.b64encode(data, altchars=alt).decode()
        if again in (text, padded) or again.rstrip("=") == text:
            return data
    raise _Failed("not a DSSE envelope (base64)")


def _pae(payload_type: str, payload: bytes) -> bytes:
    t = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(t), t, len(payload), payload)


class _State:
    def __init__(self, raw: object, key: Ed25519PublicKey) -> None:
        self.raw, self.key = raw, key
        self.payload = b""
        self.payload_type = ""
        self.sigs: list[tuple[bytes, str | None]] = []
        self.statement: dict[str, Any] = {}


def _envelope(s: _State) -> str:
    raw = s.raw
    if not isinstance(raw, Mapping) or set(raw) != {"payload", "payloadType", "signatures"}:
        raise _Failed("not a DSSE envelope (keys)")
    sigs = raw["signatures"]
    if not isinstance(sigs, list) or not 1 <= len(sigs) <= 16:
        raise _Failed("not a DSSE envelope (signatures)")
    for item in sigs:
        if not isinstance(item, Mapping) or "sig" not in item or not set(item) <= {"sig", "keyid"}:
            raise _Failed("not a DSSE envelope (signature entry)")
        s.sigs.append((_b64(item["sig"]), item.get("keyid")))
    s.payload = _b64(raw["payload"])
    s.payload_type = raw["payloadType"] if isinstance(raw["payloadType"], str) else ""
    if s.payload_type != IN_TOTO:
        raise _Failed(f"payloadType is not {IN_TOTO}")
    return f"DSSE envelope with {len(s.sigs)} signature(s)"


def _signature(s: _State) -> str:
    keyid, message = keyid_of(s.key), _pae(s.payload_type, s.payload)
    for sig, hint in s.sigs:
        if hint is not None and hint != keyid:
            continue
        try:
            s.key.verify(sig, message)
        except InvalidSignature:
            continue
        return f"signed by {keyid}"
    raise _Failed("no signature verifies with the issuer key")


def _statement(s: _State) -> str:
    try:
        parsed = json.loads(s.payload)
        canonical = rfc8785.dumps(parsed)
    except (*NOT_JSON, rfc8785.CanonicalizationError):
        raise _Failed("payload is not strict JSON") from None
    if canonical != s.payload:
        raise _Failed("payload is not canonical JSON (RFC 8785)")
    if not isinstance(parsed, dict) or parsed.get("_type") != STATEMENT_TYPE:
        raise _Failed("/_type: not an in-toto Statement v1")
    version = PREDICATE_TYPES.get(str(parsed.get("predicateType")))
    if version is None:
        raise _Failed("/predicateType: not a certificate this version knows")
    subjects = parsed.get("subject")
    one = isinstance(subjects, list) and len(subjects) == 1 and isinstance(subjects[0], dict)
    subject: dict[str, Any] = subjects[0] if one else {}  # type: ignore[index]
    if parsed["predicateType"] in REPORT_TYPES:
        digest = subject.get("digest")
        if not (
            subject.get("name") == SUBJECT
            and isinstance(digest, dict)
            and isinstance(digest.get("sha256"), str)
        ):
            raise _Failed(f"/subject: must be one {SUBJECT} with a sha256 digest")
    elif not str(subject.get("name", "")).startswith("specimen:"):
        raise _Failed("/subject: must be one specimen:<id>")
    predicate = parsed.get("predicate")
    if not isinstance(predicate, dict) or predicate.get("issuer") != keyid_of(s.key):
        raise _Failed("/predicate/issuer: is not the key that signed")
    s.statement = parsed
    return f"in-toto Statement v1 ({version}) about {subject['name']}"


def _predicate(s: _State) -> str:
    predicate_type = s.statement["predicateType"]
    if predicate_type in REPORT_TYPES:
        subject_digest = s.statement["subject"][0]["digest"]["sha256"]
        problems = report_problems(s.statement["predicate"], subject_digest, predicate_type)
        if problems:
            location, _, rule = problems[0].partition(": ")
            raise _Failed(f"/predicate{location.rstrip('/')}: {rule}")
        v2 = predicate_type == REPORT_TYPE
        recomputed = "totals, gate and bound" if v2 else "totals and gate"
        return (
            f"has the {PREDICATE_TYPES[predicate_type]} shape; "
            f"selection digest, {recomputed} recomputed"
        )
    try:
        problems = predicate_problems(s.statement["predicate"], predicate_type)
    except (ValueError, TypeError, ArithmeticError):
        # the rules raise on figures they cannot evaluate (flips beyond the sample count)
        problems = ["/: the figures cannot be evaluated"]
    if problems:
        location, _, rule = problems[0].partition(": ")
        raise _Failed(f"/predicate{location.rstrip('/')}: {rule}")
    return f"matches the {PREDICATE_TYPES[predicate_type]} schema and rules"


def _audit_id(statement: Mapping[str, Any]) -> str | None:
    """The audit named in the lineage (``audit_id``, or a ``job`` that is an audit id)."""
    for link in statement.get("predicate", {}).get("lineage") or []:
        if not isinstance(link, Mapping):
            continue
        for key in ("audit_id", "audit", "job"):
            value = link.get(key)
            if isinstance(value, str) and value.startswith("au-"):
                return value
    return None


def _report_ledger(s: _State, client: EnclaveClient, report_id: str | None) -> str:
    if report_id is None:
        raise _Failed("no report id was given to look up")
    try:
        recorded = client.report(report_id)
    except EnclaveClientError as exc:
        raise _Failed(f"the service could not confirm {report_id}: {exc}") from None
    local = envelope_digest(s.raw)  # type: ignore[arg-type]
    if envelope_digest(recorded) != local:
        raise _Failed(f"the service's report {report_id} has a different digest")
    return f"same digest {local} as the service's report {report_id}"


def _ledger(s: _State, client: EnclaveClient, audit_id: str | None) -> str:
    if s.statement["predicateType"] in REPORT_TYPES:
        return _report_ledger(s, client, audit_id)
    audit_id = audit_id or _audit_id(s.statement)
    if audit_id is None:
        raise _Failed("the certificate names no audit to look up")
    try:
        recorded = client.certificate(audit_id)
        report = client.verify(audit_id)
    except EnclaveClientError as exc:
        raise _Failed(f"the service could not confirm {audit_id}: {exc}") from None
    local = envelope_digest(s.raw)  # type: ignore[arg-type]
    if envelope_digest(recorded) != local:
        raise _Failed(f"the service's certificate for {audit_id} has a different digest")
    if not report.ok:
        failed = next((c.name for c in report.checks if not c.ok), "?")
        raise _Failed(f"the service's verification of {audit_id} fails at {failed}")
    return f"same digest {local} as recorded for {audit_id}; ledger linkage verified"


def verify_envelope_offline(
    envelope: object,
    public_key: Ed25519PublicKey,
    *,
    client: EnclaveClient | None = None,
    audit_id: str | None = None,
) -> VerifyReport:
    state = _State(envelope, public_key)
    steps: list[tuple[str, Callable[[_State], str]]] = [
        ("envelope", _envelope),
        ("signature", _signature),
        ("statement", _statement),
        ("predicate", _predicate),
    ]
    if client is not None:
        steps.append(("ledger", lambda st: _ledger(st, client, audit_id)))
    checks: list[VerificationCheck] = []
    failed = False
    for number, (name, step) in enumerate(steps, start=1):
        if failed:
            checks.append(VerificationCheck(step=number, name=name, ok=False, detail="not run"))
            continue
        try:
            detail, ok = step(state), True
        except _Failed as exc:
            detail, ok, failed = str(exc), False, True
        checks.append(VerificationCheck(step=number, name=name, ok=ok, detail=detail))
    kind = state.statement.get("predicateType")
    stated = None  # a release report states no finding of its own
    if not failed and kind in (PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPE_V1):
        stated = finding(state.statement["predicate"], kind, checked=True)
    return VerifyReport(ok=not failed, checks=tuple(checks), finding=stated)


def verify_file(
    path: str,
    public_key_path: str,
    *,
    client: EnclaveClient | None = None,
    audit_id: str | None = None,
) -> VerifyReport:
    """Verify the certificate or release report at ``path`` with the issuer key PEM at
    ``public_key_path``; with a ``client``, ``audit_id`` names the audit (or the report,
    ``rr-…``) the service recorded it under.

    The key is read as the enclave's verifier reads it (``load_public_key_pem``): a file
    that holds no Ed25519 PEM public key raises ``ledger.certificates.BadCertificateInput``.
    """
    with open(public_key_path, "rb") as handle:
        key = load_public_key_pem(handle.read())
    try:
        with open(path, "rb") as handle:
            envelope = json.loads(handle.read())
    except NOT_JSON:
        envelope = None
    return verify_envelope_offline(envelope, key, client=client, audit_id=audit_id)
