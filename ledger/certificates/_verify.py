"""Certificate verification, written as numbered steps.

``verify_certificate`` runs these steps in order; each yields one check
``{step, name, ok, detail}`` whose detail is metadata only (never payload values).
A step runs only if every earlier step passed; later steps are reported as not run.

1. ``envelope``     — the JSON is a DSSE envelope (exact keys, canonical base64) and
                      ``payloadType`` is ``application/vnd.in-toto+json``.
2. ``signature``    — a signature verifies over PAE(type, payload) with a trusted key.
3. ``statement``    — the payload is strict, canonical (RFC 8785) JSON: an in-toto
                      Statement v1 with a certificate ``predicateType`` — v2, or v1
                      (still verified; the detail names which) — and one
                      ``specimen:<id>`` subject with a sha256 digest.
4. ``predicate``    — the predicate matches its version's JSON Schema and rules (v2: the
                      label follows from the reported intervals and tolerances, counts
                      agree with N, served-by rows sum to N per arm), names the
                      subject's specimen in its request, and its ``issuer`` is the key
                      that verified in step 2. The detail states the certificate's
                      disclosure bound (bits its agent-influenced content can carry).
5. ``subject``      — the ledger holds the specimen, its manifest digest equals the
                      subject digest, and its ledger position equals ``predicate.ledger``.
6. ``ledger_entry`` — the ledger has a ``certificate.issued`` entry carrying this
                      envelope's digest (``sha256`` of ``canonical_json(envelope)``),
                      recorded after the specimen entry.

``report.ok`` is true only when all six pass. ``verify_envelope`` runs steps 1–4
(no ledger) and raises one opaque ``CertificateInvalid`` on any failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .._canonical import canonical_json, loads
from .._errors import CanonicalizationError
from ._checks import CHECK_NAMES, VerificationCheck, VerificationReport
from ._dsse import IN_TOTO_PAYLOAD_TYPE, Envelope, verify_dsse
from ._errors import BadCertificateInput, CertificateInvalid
from ._finding import finding
from ._keys import keyid_of
from ._statement import binding_problems, envelope_digest, specimen_of, statement_problems
from ._versions import PREDICATE_TYPES, predicate_problems

__all__ = ["LedgerLookup", "StaticLedgerLookup", "verify_certificate", "verify_envelope"]


@runtime_checkable
class LedgerLookup(Protocol):
    """What verification needs from a ledger. Implementations may raise
    their own errors (e.g. the ledger being unavailable); those propagate,
    because an unreachable ledger is not a failed check."""

    def specimen_manifest_digest(self, specimen_id: str) -> str | None:
        """``sha256:<hex>`` manifest digest of a sealed specimen, or None."""
        ...

    def specimen_position(self, specimen_id: str) -> tuple[int, str] | None:
        """``(entry index, entry hash)`` of the specimen's ledger entry, or None."""
        ...

    def certificate_entry(self, envelope_digest: str) -> tuple[int, str] | None:
        """``(entry index, entry hash)`` of the ``certificate.issued`` entry whose body
        carries ``envelope_digest``, or None."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticLedgerLookup:
    """A ``LedgerLookup`` over facts already in hand (an offline reviewer's export).

    ``specimens`` maps id → (manifest digest, entry index, entry hash);
    ``certificates`` maps envelope digest → (entry index, entry hash).
    """

    specimens: Mapping[str, tuple[str, int, str]] = field(default_factory=dict)
    certificates: Mapping[str, tuple[int, str]] = field(default_factory=dict)

    def specimen_manifest_digest(self, specimen_id: str) -> str | None:
        found = self.specimens.get(specimen_id)
        return None if found is None else found[0]

    def specimen_position(self, specimen_id: str) -> tuple[int, str] | None:
        found = self.specimens.get(specimen_id)
        return None if found is None else (found[1], found[2])

    def certificate_entry(self, envelope_digest: str) -> tuple[int, str] | None:
        return self.certificates.get(envelope_digest)


class _Failed(Exception):
    """Internal: a step's check failed with a metadata-only detail."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(slots=True)
class _State:
    raw: Any
    keys: Mapping[str, Ed25519PublicKey]
    lookup: LedgerLookup | None
    envelope: Envelope | None = None
    accepted: frozenset[str] = frozenset()
    statement: dict[str, Any] | None = None
    bundle: Mapping[str, Any] | None = None  # offline verification (``_bundle``)
    log_keys: tuple[Any, ...] = ()  # the log's note verifier, offline
    witnesses: tuple[Any, ...] = ()  # witnesses whose cosignatures count, offline
    quorum: int = 0  # how many of them must have cosigned
    checkpoint: Any = None  # the log's checkpoint, once step ``checkpoint`` verified it


def _step_envelope(s: _State) -> str:
    try:
        s.envelope = Envelope.from_dict(s.raw)
    except BadCertificateInput:
        raise _Failed("not a DSSE envelope (keys, types or base64)") from None
    if s.envelope.payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise _Failed(f"payloadType is not {IN_TOTO_PAYLOAD_TYPE}")
    return f"DSSE envelope with {len(s.envelope.signatures)} signature(s)"


def _step_signature(s: _State) -> str:
    assert s.envelope is not None
    try:
        s.accepted = verify_dsse(s.envelope, s.keys)
    except CertificateInvalid:
        raise _Failed("no signature verifies with a trusted key") from None
    return "signed by " + ", ".join(sorted(s.accepted))


def _step_statement(s: _State) -> str:
    assert s.envelope is not None
    try:
        parsed = loads(s.envelope.payload)
        canonical = canonical_json(parsed)
    except CanonicalizationError:
        raise _Failed("payload is not strict JSON") from None
    if canonical != s.envelope.payload:
        raise _Failed("payload is not canonical JSON (RFC 8785)")
    problems = statement_problems(parsed)
    if problems:
        raise _Failed("; ".join(problems))
    s.statement = parsed
    return f"in-toto Statement v1, certificate {PREDICATE_TYPES[parsed['predicateType']]} predicate"


def _step_predicate(s: _State) -> str:
    assert s.statement is not None
    version = s.statement["predicateType"]
    try:
        problems = [f"/predicate{p}" for p in predicate_problems(s.statement["predicate"], version)]
    except (ValueError, TypeError, ArithmeticError):
        # the rules raise on figures outside their domain (flips beyond the sample count,
        # a resolution no grid holds): the same verdict as the analysts' verifiers give
        problems = ["/predicate: the figures cannot be evaluated"]
    if not problems:
        problems = binding_problems(s.statement)
    if problems:
        raise _Failed("; ".join(problems[:8]))
    predicate = s.statement["predicate"]
    if predicate["issuer"] not in s.accepted:
        raise _Failed("/predicate/issuer: is not the key that signed")
    return (
        f"predicate matches schema {PREDICATE_TYPES[version]} and its rules; "
        f"disclosure bound {predicate['disclosure']['bits']:.2f} bits"
    )


def _step_subject(s: _State) -> str:
    assert s.statement is not None and s.lookup is not None
    specimen_id, digest = specimen_of(s.statement)
    recorded = s.lookup.specimen_manifest_digest(specimen_id)
    if recorded is None:
        raise _Failed("the ledger holds no such specimen")
    if recorded != digest:
        raise _Failed("subject digest differs from the ledger's manifest digest")
    position = s.lookup.specimen_position(specimen_id)
    claimed = s.statement["predicate"]["ledger"]
    if position != (claimed["specimen_entry_index"], claimed["specimen_entry_hash"]):
        raise _Failed("predicate.ledger differs from the specimen's ledger position")
    return f"specimen entry {position[0]} with matching manifest digest"


def _step_ledger_entry(s: _State) -> str:
    assert s.statement is not None and s.lookup is not None
    digest = envelope_digest(s.raw)
    entry = s.lookup.certificate_entry(digest)
    if entry is None:
        raise _Failed("the ledger has no certificate.issued entry for this envelope")
    if entry[0] <= s.statement["predicate"]["ledger"]["specimen_entry_index"]:
        raise _Failed("certificate entry precedes its specimen entry")
    return f"certificate.issued at entry {entry[0]}"


_STEPS: tuple[Callable[[_State], str], ...] = (
    _step_envelope,
    _step_signature,
    _step_statement,
    _step_predicate,
    _step_subject,
    _step_ledger_entry,
)


def _trusted(
    public_key: Ed25519PublicKey | Mapping[str, Ed25519PublicKey],
) -> Mapping[str, Ed25519PublicKey]:
    if isinstance(public_key, Ed25519PublicKey):
        return {keyid_of(public_key): public_key}
    if isinstance(public_key, Mapping) and all(
        isinstance(k, Ed25519PublicKey) for k in public_key.values()
    ):
        return public_key
    raise TypeError("trusted keys must be Ed25519 public keys")


def run_steps(
    state: _State,
    steps: tuple[Callable[[_State], str], ...] = _STEPS,
    names: tuple[str, ...] = CHECK_NAMES,
) -> VerificationReport:
    """Each step in turn, each one run only if every earlier one passed."""
    checks: list[VerificationCheck] = []
    failed_at: int | None = None
    for number, (name, step) in enumerate(zip(names, steps, strict=True), 1):
        if failed_at is not None:
            detail, ok = f"not run: step {failed_at} failed", False
        else:
            try:
                detail, ok = step(state), True
            except _Failed as failure:
                detail, ok, failed_at = failure.detail, False, number
        checks.append(VerificationCheck(step=number, name=name, ok=ok, detail=detail))
    statement, found = state.statement, None
    if statement is not None and failed_at is None:
        found = finding(statement["predicate"], statement["predicateType"], checked=True)
    return VerificationReport(checks=tuple(checks), statement=statement, names=names, finding=found)


def verify_certificate(
    envelope: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey | Mapping[str, Ed25519PublicKey],
    ledger_lookup: LedgerLookup,
) -> VerificationReport:
    """Run steps 1–6 (module docstring) and report every check."""
    state = _State(raw=envelope, keys=_trusted(public_key), lookup=ledger_lookup)
    return run_steps(state)


def verify_envelope(
    envelope: Mapping[str, Any], public_keys: Mapping[str, Ed25519PublicKey]
) -> dict[str, Any]:
    """Steps 1–4 without a ledger: the verified Statement, or ``CertificateInvalid``."""
    state = _State(raw=envelope, keys=_trusted(public_keys), lookup=None)
    report = run_steps(state, _STEPS[:4], CHECK_NAMES[:4])
    if not all(c.ok for c in report.checks) or report.statement is None:
        raise CertificateInvalid()
    return report.statement
