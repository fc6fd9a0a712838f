"""Verifying a release report against the certificates it names (``docs/release-gate.md``),
one definition for the enclave (``replay-enclave verify``, with its ledger) and for the
analyst's side (the Jupyter server, with a report bundle and two public keys).

1. The envelope is DSSE over an in-toto Statement v1 with a report predicate type (v2,
   or v1 from before reports were tight), signed by the trusted key; its predicate has
   that version's shape (``report_shape_problems``: keys, types, and in v2 one of eight
   outcomes per row).
2. The subject's digest is the predicate's selection digest, and that digest is
   recomputed from the listed specimens and erased members.
3. Every listed certificate is found, has the named envelope digest and passes its own
   verification (the caller's: with the ledger, or as a bundle); it is about the listed
   specimen, of the report's intervention (the same candidate digest, or the same
   revision swap) and sample count, and the row's outcome follows from it (a row with no
   certificate says the member was refused, or its audit failed).
4. Totals, the gate and (v2) the disclosure bound are recomputed from the rows.
5. The ledger recorded this report: a ``release.reported`` entry of its selection names
   its id and its whole envelope digest, with its member count and gate. A report signed
   by the key but never recorded fails here.

``report_checks`` runs the five with the caller's lookups and returns (check, ok,
detail) in that order. A report bundle (``make_report_bundle``) is verified offline with
the issuer's key and the log's key alone (``verify_report_bundle``): a ``bundle`` check
of its shape first, then the five, where each certificate is its own certificate bundle
(``verify_bundle``) and the ``release.reported`` entry is the bundle's, proven in a
checkpoint the log key signed (``proven_entry``). The browser's port is
``labextension/src/verify/reportBundle.ts``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._bundle import ProvenEntry, proven_entry, verify_bundle
from ._dsse import Envelope, verify_dsse
from ._errors import CertificateInvalid, PredicateInvalid
from ._keys import keyid_of
from ._report_shape import (
    REPORT_LABELS,
    REPORT_SUBJECT,
    REPORT_TYPE,
    REPORT_TYPE_V1,
    report_disclosure,
    report_row_holds,
    report_selection_digest,
    report_shape_problems,
)
from ._statement import STATEMENT_TYPE, envelope_digest
from .tlog import NoteVerifier, WitnessVerifier

__all__ = [
    "REPORT_BUNDLE_CHECK_NAMES",
    "REPORT_BUNDLE_MEDIA_TYPE",
    "ReportCheck",
    "is_report_bundle",
    "make_report_bundle",
    "report_checks",
    "report_layers_changed",
    "report_outcome",
    "verify_report_bundle",
]

REPORT_BUNDLE_MEDIA_TYPE = "application/vnd.replay-enclave.report-bundle.v1+json"
# ``verify_report_bundle``'s checks, in order (``report_checks``' five after ``bundle``)
REPORT_BUNDLE_CHECK_NAMES = (
    "bundle",
    "signature and statement",
    "selection digest",
    "certificates",
    "totals and gate",
    "ledger entry",
)

ReportCheck = tuple[str, bool, str]

_VERSIONS = {REPORT_TYPE: "release report v2", REPORT_TYPE_V1: "release report v1"}


def report_outcome(
    predicate: Mapping[str, Any] | None, *, refused: bool = False
) -> tuple[str, str | None]:
    """(label, reason) of one audit from its certificate predicate, or of a member with
    no certificate: ``refused`` at submission, else ``failed`` (the audit's own failure
    code stays in the audit's record: it is not an outcome)."""
    if predicate is None:
        return "not-auditable", "refused" if refused else "failed"
    classification = predicate.get("classification")
    effect = predicate.get("effect") or {}
    if classification == "influential":
        return ("decision-changed" if effect.get("flips") else "layer-changed"), None
    if classification == "equivalent":
        return ("layer-changed" if report_layers_changed(predicate) else "equivalent"), None
    if classification == "inconclusive":
        return "inconclusive", None
    if classification in ("baseline-not-reproduced", "observable-only"):
        return "not-auditable", str(classification)
    return "not-auditable", "failed"


def report_layers_changed(predicate: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Load-bearing layers (not ignored by the request) that changed in any sample."""
    if predicate is None:
        return ()
    changes = (predicate.get("effect") or {}).get("layer_changes") or {}
    ignored = set((predicate.get("request", {}).get("tolerances") or {}).get("ignored") or ())
    # a count of samples (v2) or none / some / all of them (v3)
    return tuple(sorted(k for k, v in changes.items() if v not in (0, "none") and k not in ignored))


def _outcome_follows(
    predicate_type: str, row: Mapping[str, Any], certified: Mapping[str, Any] | None
) -> bool:
    """The row's outcome is the one its certificate (or its absence) gives."""
    if predicate_type == REPORT_TYPE_V1:
        if certified is None:
            return bool(row["label"] == "not-auditable")
        # v1 labelled an equivalent audit equivalent and listed the layers that changed
        equivalent = certified.get("classification") == "equivalent"
        label = "equivalent" if equivalent else report_outcome(certified)[0]
        layers = list(report_layers_changed(certified))
        return (label, layers) == (row["label"], row["layers_changed"])
    if certified is None:
        refused = row["audit"] is None
        return (row["label"], row["reason"]) == report_outcome(None, refused=refused)
    return row["audit"] is not None and (row["label"], row["reason"]) == report_outcome(certified)


def _statement(envelope: Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
    if not isinstance(value, dict):
        raise ValueError("statement")
    return value


def _report_id(envelope: Mapping[str, Any]) -> str:
    """``rr-`` and the first 16 hex digits of the report's envelope digest (the id the
    ledger stores it under)."""
    return "rr-" + envelope_digest(envelope).split(":", 1)[1][:16]


def report_checks(
    envelope: Mapping[str, Any],
    public_key: Ed25519PublicKey,
    found_of: Callable[[list[str]], Mapping[str, Mapping[str, Any]]],
    member_ok: Callable[[Mapping[str, Any]], bool],
    recorded_of: Callable[[Any, str, str], tuple[Any, str]],
) -> list[ReportCheck]:
    """Steps 1–5 (module docstring): ``found_of`` gives the named certificates by
    digest, ``member_ok`` verifies one, ``recorded_of`` the report's ledger entry body
    (or None) and what was checked."""
    checks: list[ReportCheck] = []
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
    recomputed = report_selection_digest(
        [r["specimen"] for r in rows], predicate.get("erased") or []
    )
    subject = statement.get("subject") or [{}]
    same = (
        recomputed == predicate.get("selection_digest")
        and subject[0].get("name") == REPORT_SUBJECT
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
        if not member_ok(cert):
            bad.append(row["specimen"])
            continue
        pred = _statement(cert)["predicate"]
        if (
            pred["request"]["specimen"] != row["specimen"]
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
    totals = {label: sum(r["label"] == label for r in rows) for label in REPORT_LABELS}
    totals["erased"] = len(predicate.get("erased") or [])
    totals["specimens"] = len(rows)
    failing = sorted(r["specimen"] for r in rows if r["must_hold"] and not report_row_holds(r))
    consistent = totals == predicate.get("totals") and predicate.get("gate") == {
        "passed": not failing,
        "failing": failing,
    }
    if predicate_type == REPORT_TYPE:
        consistent = consistent and predicate.get("disclosure") == report_disclosure(len(rows))
    checks.append(("totals and gate", consistent, "recomputed" if consistent else "differ"))
    # 5. the ledger recorded this very report
    body, said = recorded_of(
        predicate.get("selection_digest"), _report_id(envelope), envelope_digest(envelope)
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


def verify_report_bundle(
    bundle: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> list[ReportCheck]:
    """A report bundle with the issuer's and the log's keys alone: a check of the
    bundle's shape, then ``report_checks`` with each certificate verified as its own
    bundle and the ledger entry proven in a checkpoint the log key signed."""
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
    checks = report_checks(bundle["envelope"], public_key, lambda _: envelopes, member_ok, recorded)
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
