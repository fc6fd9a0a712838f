"""Verify a release report and every certificate it names.

1. The envelope is DSSE over an in-toto Statement v1 with the report's predicate type,
   signed by the trusted key.
2. The subject's digest is the predicate's selection digest, and that digest is
   recomputed from the listed specimens and erased members.
3. Every listed certificate is found (in the database's ``certificates``, or a
   directory of ``*.dsse.json`` exported from it), has the named
   envelope digest, and passes the full certificate verification (ledger included);
   it is about the listed specimen and its label follows from it.
   The certificate is of the report's intervention (the same candidate digest, or the
   same revision swap) and sample count, not one from another run.
4. Totals and the gate are recomputed from the rows.
5. The ledger recorded this report: a ``release.reported`` entry of its selection names
   its id and (entries written since they carry it) its whole envelope digest, with its
   member count and gate. A report signed by the key but never recorded fails here.

Returns a list of (check, ok, detail) in that order; ``ok`` of the whole is all of them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger import report_id_of
from ledger.certificates import (
    CertificateInvalid,
    Envelope,
    PredicateInvalid,
    envelope_digest,
    keyid_of,
    verify_certificate,
    verify_dsse,
)

from ._library import selection_digest
from ._report import (
    LABELS,
    REPORT_TYPE,
    STATEMENT_TYPE,
    SUBJECT,
    holds,
    label_of,
    layers_changed,
)

__all__ = ["is_report", "verify_report"]

Check = tuple[str, bool, str]


def is_report(envelope: Mapping[str, Any]) -> bool:
    try:
        return _statement(envelope).get("predicateType") == REPORT_TYPE
    except (ValueError, TypeError, KeyError):
        return False


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
    checks: list[Check] = []
    # 1. signature and statement
    try:
        verify_dsse(Envelope.from_dict(envelope), {keyid_of(public_key): public_key})
        statement = _statement(envelope)
        ok = (
            statement.get("_type") == STATEMENT_TYPE
            and statement.get("predicateType") == REPORT_TYPE
        )
        checks.append(
            ("signature and statement", ok, "release report v1" if ok else "not a report")
        )
    except (CertificateInvalid, ValueError, TypeError, KeyError):
        return [("signature and statement", False, "invalid envelope or signature")]
    if not ok:
        return checks
    predicate = statement["predicate"]
    rows: list[dict[str, Any]] = list(predicate.get("specimens") or ())
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
    if certificates_dir is not None:
        found = _certificates(certificates_dir)
    else:
        assert certificate_source is not None
        named = [str(r["certificate"]) for r in rows if r.get("certificate") is not None]
        found = dict(certificate_source(named))
    bad: list[str] = []
    for row in rows:
        digest = row.get("certificate")
        if digest is None:
            if row.get("label") != "not-auditable":
                bad.append(row["specimen"])
            continue
        cert = found.get(digest)
        if cert is None:
            bad.append(row["specimen"])
            continue
        report = verify_certificate(cert, public_key=public_key, ledger_lookup=ledger_lookup)
        pred = _statement(cert)["predicate"]
        label, _ = label_of(pred, None)
        if (
            not report.ok
            or pred["request"]["specimen"] != row["specimen"]
            or not _same_intervention(pred["request"], predicate.get("intervention") or {})
            or pred["request"].get("samples") != predicate.get("samples")
            or label != row["label"]
            or list(layers_changed(pred)) != row["layers_changed"]
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
    failing = sorted(
        r["specimen"]
        for r in rows
        if r["must_hold"] and not holds(r["label"], r.get("layers_changed") or [])
    )
    consistent = totals == predicate.get("totals") and predicate.get("gate") == {
        "passed": not failing,
        "failing": failing,
    }
    checks.append(("totals and gate", consistent, "recomputed" if consistent else "differ"))
    # 5. the ledger recorded this very report (without a ledger, nothing shows it did)
    body = (
        None
        if ledger_lookup is None
        else ledger_lookup.report_entry(
            predicate.get("selection_digest"), report_id_of(envelope), envelope_digest(envelope)
        )
    )
    recorded = body is not None and (
        body.get("selection_digest") == predicate.get("selection_digest")
        and body.get("specimens") == len(rows)
        and body.get("gate_passed") == (predicate.get("gate") or {}).get("passed")
    )
    checks.append(
        ("ledger entry", recorded, "release.reported" if recorded else "no entry records it")
    )
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
