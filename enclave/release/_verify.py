"""Verify a release report and every certificate it names.

1. The envelope is DSSE over an in-toto Statement v1 with a report predicate type (v2,
   or v1 from before reports were tight), signed by the trusted key; its predicate has
   that version's shape (``ledger.certificates.report_shape_problems``: keys, types,
   and in v2 one of eight outcomes per row).
2. The subject's digest is the predicate's selection digest, and that digest is
   recomputed from the listed specimens and erased members.
3. Every listed certificate is found (in the database's ``certificates``, or a
   directory of ``*.dsse.json`` exported from it), has the named
   envelope digest, and passes the full certificate verification (ledger included);
   it is about the listed specimen and the row's outcome follows from it (a row with no
   certificate says the member was refused, or its audit failed).
   The certificate is of the report's intervention (the same candidate digest, or the
   same revision swap) and sample count, not one from another run.
4. Totals, the gate and (v2) the disclosure bound are recomputed from the rows.
5. The ledger recorded this report: a ``release.reported`` entry of its selection names
   its id and (entries written since they carry it) its whole envelope digest, with its
   member count and gate. A report signed by the key but never recorded fails here.

Returns a list of (check, ok, detail) in that order; ``ok`` of the whole is all of them.

A report bundle (``make_report_bundle``, ``<report>.bundle.json``) is verified offline
with the issuer's key and the log's key alone (``verify_report_bundle``): a ``bundle``
check of its shape first, then the same five, where each certificate is its own
certificate bundle verified as such (``ledger.certificates.verify_bundle``) and the
``release.reported`` entry is the bundle's, proven in a checkpoint the log key signed
(``ledger.certificates.proven_entry``) and naming this report's id and envelope digest.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger import report_id_of
from ledger.certificates import (
    CertificateInvalid,
    Envelope,
    PredicateInvalid,
    ProvenEntry,
    envelope_digest,
    keyid_of,
    proven_entry,
    report_shape_problems,
    verify_bundle,
    verify_certificate,
    verify_dsse,
)
from ledger.certificates.tlog import NoteVerifier, WitnessVerifier

from ._library import selection_digest
from ._report import (
    LABELS,
    REPORT_TYPE,
    REPORT_TYPE_V1,
    STATEMENT_TYPE,
    SUBJECT,
    disclosure_of,
    holds,
    label_of,
    layers_changed,
)

__all__ = [
    "REPORT_BUNDLE_MEDIA_TYPE",
    "is_report",
    "is_report_bundle",
    "make_report_bundle",
    "verify_report",
    "verify_report_bundle",
]

REPORT_BUNDLE_MEDIA_TYPE = "application/vnd.replay-enclave.report-bundle.v1+json"

Check = tuple[str, bool, str]

_VERSIONS = {REPORT_TYPE: "release report v2", REPORT_TYPE_V1: "release report v1"}


def is_report(envelope: Mapping[str, Any]) -> bool:
    try:
        return _statement(envelope).get("predicateType") in _VERSIONS
    except (ValueError, TypeError, KeyError):
        return False


def _outcome_follows(
    predicate_type: str, row: Mapping[str, Any], certified: Mapping[str, Any] | None
) -> bool:
    """The row's outcome is the one its certificate (or its absence) gives."""
    if predicate_type == REPORT_TYPE_V1:
        if certified is None:
            return bool(row["label"] == "not-auditable")
        # v1 labelled an equivalent audit equivalent and listed the layers that changed
        equivalent = certified.get("classification") == "equivalent"
        label = "equivalent" if equivalent else label_of(certified)[0]
        return (label, list(layers_changed(certified))) == (row["label"], row["layers_changed"])
    if certified is None:
        refused = row["audit"] is None
        return (row["label"], row["reason"]) == label_of(None, refused=refused)
    return row["audit"] is not None and (row["label"], row["reason"]) == label_of(certified)


def _statement(envelope: Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
    if not isinstance(value, dict):
        raise ValueError("statement")
    return value


def _certificates(folder: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.dsse.json")):
        try:
            envelope = json.loads(path.read_bytes())
            found[envelope_digest(envelope)] = envelope
        except (OSError, ValueError, CertificateInvalid, PredicateInvalid):
            continue  # a malformed file is simply not a certificate
    return found


CertificateSource = Callable[[Iterable[str]], Mapping[str, dict[str, Any]]]


def verify_report(
    envelope: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey,
    ledger_lookup: Any,
    certificates_dir: Path | None = None,
    certificate_source: CertificateSource | None = None,
) -> list[Check]:
    """``certificates_dir``: a folder of exported certificates; ``certificate_source``:
    the stored envelopes by digest (``_documents.certificates_by_digest``). One of them."""
    if (certificates_dir is None) == (certificate_source is None):
        raise TypeError("give one of certificates_dir or certificate_source")

    def found(named: list[str]) -> Mapping[str, Mapping[str, Any]]:
        if certificates_dir is not None:
            return _certificates(certificates_dir)
        assert certificate_source is not None
        return dict(certificate_source(named))

    def member_ok(certificate: Mapping[str, Any]) -> bool:
        return verify_certificate(
            certificate, public_key=public_key, ledger_lookup=ledger_lookup
        ).ok

    def recorded(selection: Any, report_id: str, digest: str) -> tuple[Any, str]:
        # without a ledger, nothing shows the report was recorded
        body = (
            None
            if ledger_lookup is None
            else ledger_lookup.report_entry(selection, report_id, digest)
        )
        return body, "release.reported" if body is not None else "no entry records it"

    return _verify(envelope, public_key, found, member_ok, recorded)


def verify_report_bundle(
    bundle: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> list[Check]:
    """A report bundle (``make_report_bundle``) with the issuer's and the log's keys
    alone: the checks of ``verify_report`` after one on the bundle's shape, each
    certificate verified as its own bundle, and the ledger entry proven in a checkpoint
    the log key signed instead of looked up."""
    if not _is_report_bundle_shape(bundle):
        return [("bundle", False, "not a release report bundle (keys or media type)")]
    members: dict[str, Mapping[str, Any]] = {}
    for member in bundle["certificates"]:
        try:
            members[envelope_digest(member["envelope"])] = member
        except (CertificateInvalid, PredicateInvalid, KeyError, TypeError, ValueError):
            continue  # a malformed member is simply not a certificate
    fields, proven = proven_entry(
        bundle["report_entry"], log_key=log_key, witnesses=witnesses, quorum=quorum
    )

    def member_ok(certificate: Mapping[str, Any]) -> bool:
        member = members[envelope_digest(certificate)]
        return verify_bundle(
            member, public_key=public_key, log_key=log_key, witnesses=witnesses, quorum=quorum
        ).ok

    def recorded(selection: Any, report_id: str, digest: str) -> tuple[Any, str]:
        if fields is None:
            return None, proven
        body = fields["body"]
        ours = (
            fields["kind"] == "release.reported"
            and fields["subject"] == selection
            and body.get("report_id") == report_id
            and body.get("envelope_digest") == digest
        )
        return (body, f"release.reported, {proven}") if ours else (None, "not this report's entry")

    envelopes = {digest: member["envelope"] for digest, member in members.items()}
    checks = _verify(bundle["envelope"], public_key, lambda _: envelopes, member_ok, recorded)
    return [("bundle", True, f"{len(members)} certificate bundles"), *checks]


def make_report_bundle(
    envelope: Mapping[str, Any],
    *,
    report_entry: ProvenEntry,
    certificates: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The report's envelope, the proof of its ``release.reported`` entry and the
    bundle of every certificate it names."""
    return {
        "mediaType": REPORT_BUNDLE_MEDIA_TYPE,
        "envelope": dict(envelope),
        "report_entry": report_entry.to_dict(),
        "certificates": [dict(c) for c in certificates],
    }


def is_report_bundle(document: Any) -> bool:
    """Whether ``document`` says it is a report bundle (not whether it is a sound one)."""
    return isinstance(document, Mapping) and document.get("mediaType") == REPORT_BUNDLE_MEDIA_TYPE


def _is_report_bundle_shape(bundle: Any) -> bool:
    return (
        isinstance(bundle, Mapping)
        and set(bundle) == {"mediaType", "envelope", "report_entry", "certificates"}
        and bundle["mediaType"] == REPORT_BUNDLE_MEDIA_TYPE
        and isinstance(bundle["envelope"], Mapping)
        and isinstance(bundle["certificates"], list)
        and all(isinstance(c, Mapping) for c in bundle["certificates"])
    )


def _verify(
    envelope: Mapping[str, Any],
    public_key: Ed25519PublicKey,
    found_of: Callable[[list[str]], Mapping[str, Mapping[str, Any]]],
    member_ok: Callable[[Mapping[str, Any]], bool],
    recorded_of: Callable[[Any, str, str], tuple[Any, str]],
) -> list[Check]:
    """Steps 1–5 (module docstring): ``found_of`` gives the named certificates by
    digest, ``member_ok`` verifies one, ``recorded_of`` the report's ledger entry body
    (or None) and what was checked."""
    checks: list[Check] = []
    # 1. signature, statement and rows
    try:
        verify_dsse(Envelope.from_dict(envelope), {keyid_of(public_key): public_key})
        statement = _statement(envelope)
        predicate_type = statement.get("predicateType")
        if statement.get("_type") != STATEMENT_TYPE or predicate_type not in _VERSIONS:
            return [("signature and statement", False, "not a report")]
    except (CertificateInvalid, ValueError, TypeError, KeyError):
        return [("signature and statement", False, "invalid envelope or signature")]
    predicate = statement["predicate"]
    version = _VERSIONS[predicate_type]
    problems = report_shape_problems(predicate, predicate_type)
    if problems:
        # a fixed sentence from the shape's rules: never a value from the report
        return [("signature and statement", False, f"not a {version}: {problems[0]}")]
    rows: list[dict[str, Any]] = predicate["specimens"]
    checks.append(("signature and statement", True, version))
    # 2. selection
    recomputed = selection_digest([r["specimen"] for r in rows], predicate.get("erased") or [])
    subject = statement.get("subject") or [{}]
    same = (
        recomputed == predicate.get("selection_digest")
        and subject[0].get("name") == SUBJECT
        and "sha256:" + str(subject[0].get("digest", {}).get("sha256")) == recomputed
    )
    checks.append(("selection digest", same, "recomputed" if same else "differs"))
    # 3. every certificate
    found = found_of([str(r["certificate"]) for r in rows if r.get("certificate") is not None])
    bad: list[str] = []
    for row in rows:
        digest = row["certificate"]
        if digest is None:
            if not _outcome_follows(predicate_type, row, None):
                bad.append(row["specimen"])
            continue
        cert = found.get(digest)
        if cert is None:
            bad.append(row["specimen"])
            continue
        pred = _statement(cert)["predicate"]
        if (
            not member_ok(cert)
            or pred["request"]["specimen"] != row["specimen"]
            or not _same_intervention(pred["request"], predicate.get("intervention") or {})
            or pred["request"].get("samples") != predicate.get("samples")
            or not _outcome_follows(predicate_type, row, pred)
        ):
            bad.append(row["specimen"])
    checks.append(
        (
            "certificates",
            not bad,
            f"{len(rows)} checked" if not bad else "failed: " + ", ".join(bad),
        )
    )
    # 4. totals and gate
    totals = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    totals["erased"] = len(predicate.get("erased") or [])
    totals["specimens"] = len(rows)
    failing = sorted(r["specimen"] for r in rows if r["must_hold"] and not holds(r))
    consistent = totals == predicate.get("totals") and predicate.get("gate") == {
        "passed": not failing,
        "failing": failing,
    }
    if predicate_type == REPORT_TYPE:
        consistent = consistent and predicate.get("disclosure") == disclosure_of(len(rows))
    checks.append(("totals and gate", consistent, "recomputed" if consistent else "differ"))
    # 5. the ledger recorded this very report
    body, said = recorded_of(
        predicate.get("selection_digest"), report_id_of(envelope), envelope_digest(envelope)
    )
    recorded = body is not None and (
        body.get("selection_digest") == predicate.get("selection_digest")
        and body.get("specimens") == len(rows)
        and body.get("gate_passed") == (predicate.get("gate") or {}).get("passed")
    )
    if body is not None and not recorded:
        said = "the entry's member count or gate differs"
    checks.append(("ledger entry", recorded, said))
    return checks


def _same_intervention(request: Mapping[str, Any], declared: Mapping[str, Any]) -> bool:
    """The certificate is of this report's intervention (not an older run's)."""
    if declared.get("strategy") == "CODE":
        candidate = request.get("candidate") or {}
        return request.get("strategy") == "CODE" and candidate == {
            "target": declared.get("target"),
            "digest": declared.get("digest"),
        }
    return request.get("strategy") == "REVISION" and request.get("revision") == declared.get(
        "revision"
    )


def all_ok(checks: Iterable[Check]) -> bool:
    return all(ok for _, ok, _ in checks)
