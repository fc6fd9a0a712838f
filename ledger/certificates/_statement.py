"""in-toto Statement v1 around the certificate predicate, and its signing.

Invariants:

1. The subject is exactly one ``specimen:<id>`` whose ``sha256`` digest is the hex of
   the specimen's manifest digest; ``predicate.request.specimen`` names the same id.
2. Signed bytes are ``canonical_json(statement)`` (RFC 8785), never display JSON.
3. ``build_statement`` makes v2 statements; a v1 statement is still accepted (verified,
   and signed as-is by ``sign_statement`` for the v1 golden test).
4. Nothing invalid is signed: the statement shape, the predicate schema and rules,
   and ``predicate.issuer == key.keyid`` are checked before the signature is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._canonical import canonical_digest, canonical_json
from .._errors import CanonicalizationError
from ._dsse import IN_TOTO_PAYLOAD_TYPE, sign_dsse
from ._errors import PredicateInvalid
from ._keys import Signer
from ._versions import PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPES, predicate_problems

__all__ = [
    "STATEMENT_TYPE",
    "PREDICATE_TYPE",
    "build_statement",
    "statement_problems",
    "sign_statement",
    "envelope_digest",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SUBJECT_PREFIX = "specimen:"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_MANIFEST_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")


def build_statement(
    *, specimen_id: str, manifest_digest: str, predicate: Mapping[str, Any]
) -> dict[str, Any]:
    """The Statement for one specimen; ``manifest_digest`` is ``sha256:<hex>``."""
    match = _MANIFEST_DIGEST.match(manifest_digest) if isinstance(manifest_digest, str) else None
    if match is None:
        raise ValueError("manifest_digest must be 'sha256:<64 hex>'")
    if not isinstance(specimen_id, str) or not specimen_id:
        raise ValueError("specimen_id must be a non-empty string")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT_PREFIX + specimen_id, "digest": {"sha256": match.group(1)}}],
        # a predicate with every count (a row per sample: detail a policy granted) is v2
        "predicateType": PREDICATE_TYPE_V2 if "sample_rows" in predicate else PREDICATE_TYPE,
        "predicate": dict(predicate),
    }


def _subject_problems(statement: Mapping[str, Any]) -> list[str]:
    subject = statement.get("subject")
    if not isinstance(subject, list) or len(subject) != 1:
        return ["/subject: must hold exactly one entry"]
    entry = subject[0]
    if not isinstance(entry, Mapping) or set(entry) != {"name", "digest"}:
        return ["/subject/0: must have exactly name and digest"]
    name, digest = entry["name"], entry["digest"]
    if not isinstance(name, str) or not name.startswith(SUBJECT_PREFIX) or name == SUBJECT_PREFIX:
        return ["/subject/0/name: must be specimen:<id>"]
    if len(name) > 256 + len(SUBJECT_PREFIX):
        return ["/subject/0/name: too long"]
    if not isinstance(digest, Mapping) or set(digest) != {"sha256"}:
        return ["/subject/0/digest: must hold exactly sha256"]
    if not isinstance(digest["sha256"], str) or not _HEX64.match(digest["sha256"]):
        return ["/subject/0/digest/sha256: must be 64 lowercase hex digits"]
    return []


def statement_problems(statement: Any) -> list[str]:
    """Shape of the Statement (type, subject, predicate type) as ``location: rule``."""
    if not isinstance(statement, Mapping):
        return ["/: must be an object"]
    if set(statement) != {"_type", "subject", "predicateType", "predicate"}:
        return ["/: must have exactly _type, subject, predicateType, predicate"]
    problems = []
    if statement["_type"] != STATEMENT_TYPE:
        problems.append("/_type: must be the in-toto Statement v1 type")
    if statement["predicateType"] not in PREDICATE_TYPES:
        problems.append("/predicateType: must be a certificate type (v2, or v1)")
    problems.extend(_subject_problems(statement))
    return problems


def specimen_of(statement: Mapping[str, Any]) -> tuple[str, str]:
    """``(specimen_id, "sha256:<hex>")`` of a statement that passed ``statement_problems``."""
    entry = statement["subject"][0]
    return entry["name"][len(SUBJECT_PREFIX) :], "sha256:" + entry["digest"]["sha256"]


def binding_problems(statement: Mapping[str, Any]) -> list[str]:
    """The predicate's request names the subject's specimen."""
    specimen_id, _ = specimen_of(statement)
    if statement["predicate"]["request"]["specimen"] != specimen_id:
        return ["/predicate/request/specimen: differs from the subject"]
    return []


def sign_statement(statement: Mapping[str, Any], key: Signer) -> dict[str, Any]:
    """Validate, canonicalise and sign; returns the DSSE envelope as a JSON object."""
    problems = statement_problems(statement)
    if not problems:
        problems = [
            f"/predicate{p}"
            for p in predicate_problems(statement["predicate"], statement["predicateType"])
        ]
    if not problems:
        problems = binding_problems(statement)
    if not problems and statement["predicate"]["issuer"] != key.keyid:
        problems = ["/predicate/issuer: is not the signing key"]
    if problems:
        raise PredicateInvalid(problems)
    try:
        payload = canonical_json(statement)
    except CanonicalizationError as exc:
        raise PredicateInvalid(["/: has no canonical JSON form"]) from exc
    return sign_dsse(payload, IN_TOTO_PAYLOAD_TYPE, key).to_dict()


def envelope_digest(envelope: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of ``canonical_json(envelope)``: what the ledger records."""
    try:
        return canonical_digest(envelope)
    except CanonicalizationError as exc:
        raise PredicateInvalid(["/: envelope has no canonical JSON form"]) from exc
