"""Certificates: DSSE, in-toto Statement, predicate schema, keys, verification steps."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import (  # type: ignore[attr-defined]  # re-exported names
    CryptoSigner,
    SSlibKey,
)

import ledger.certificates as certify
from enclave import BadInput
from enclave.keys import SigningKey
from ledger import canonical_json, loads
from ledger.certificates import (
    CHECK_NAMES,
    IN_TOTO_PAYLOAD_TYPE,
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
    BadCertificateInput,
    CertificateInvalid,
    Envelope,
    LedgerLookup,
    PredicateInvalid,
    StaticLedgerLookup,
    build_statement,
    envelope_digest,
    load_public_key_pem,
    pae,
    predicate_problems,
    sign_dsse,
    sign_statement,
    verify_certificate,
    verify_dsse,
    verify_envelope,
)
from tests.support.ledger_lookup import lookup_of

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
GOLDEN_SEED = hashlib.sha256(b"replay-enclave golden certificate key v1").digest()
# RFC 8032 §7.1 TEST 1 and TEST 2 keys, also the keys of the DSSE test vectors
RFC8032_SEED_A = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_SEED_B = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
TINY_STATEMENT_B64 = "eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEifQ=="


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.from_private_bytes(GOLDEN_SEED)


def _golden(version: str) -> dict[str, Any]:
    loaded = loads((GOLDEN / f"certificate_{version}.statement.json").read_bytes())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture
def statement() -> dict[str, Any]:
    return _golden("v3")


@pytest.fixture
def statement_v2() -> dict[str, Any]:
    return _golden("v2")


@pytest.fixture
def statement_v1() -> dict[str, Any]:
    return _golden("v1")


def _verify(envelope: Any, key: SigningKey, lookup: LedgerLookup) -> certify.VerificationReport:
    return verify_certificate(envelope, public_key=key.public_key, ledger_lookup=lookup)


def _failed_step(report: certify.VerificationReport) -> str:
    failure = report.first_failure
    assert failure is not None and not report.ok
    return failure.name


def _sign_raw(statement: Any, key: SigningKey, *, payload: bytes | None = None) -> dict[str, Any]:
    """Sign without sign_statement's checks, as a forger holding the key could."""
    body = canonical_json(statement) if payload is None else payload
    return sign_dsse(body, IN_TOTO_PAYLOAD_TYPE, key).to_dict()


# --- public surface ----------------------------------------------------------------


# --- DSSE ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload_type", "body", "expected"),
    [
        # protocol.md "Test Vectors"
        (
            "http://example.com/HelloWorld",
            b"hello world",
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world",
        ),
        (
            IN_TOTO_PAYLOAD_TYPE,
            base64.b64decode(TINY_STATEMENT_B64),
            b'DSSEv1 28 application/vnd.in-toto+json 43 {"_type":"https://in-toto.io/Statement/v1"}',
        ),
        # LEN is the UTF-8 byte length (29), not the character count (28)
        (
            "application/vnd.exämple+json",
            b"{}",
            "DSSEv1 29 application/vnd.exämple+json 2 {}".encode(),
        ),
        # an empty body still ends with a space
        (IN_TOTO_PAYLOAD_TYPE, b"", b"DSSEv1 28 application/vnd.in-toto+json 0 "),
    ],
)
def test_pae_vectors(payload_type: str, body: bytes, expected: bytes) -> None:
    assert pae(payload_type, body) == expected


def _rfc8032_keys() -> dict[str, Any]:
    a = SigningKey.from_private_bytes(RFC8032_SEED_A)
    b = SigningKey.from_private_bytes(RFC8032_SEED_B)
    assert a.public_key.public_bytes_raw().hex() == (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    )
    return {"A": a, "B": b}


# Signatures published with the DSSE test vectors (keys A and B above).
SIG_A = "2WAfaHm5jluo0w+0rk8uVkluELJYWjSmU9x7EUzx+AyteDGJ4/nqyJXfmAUVFIAoQafWm7AxBZNw5M9ixNHiCA=="
SIG_B = "c1+67/aT0yqEpwx8PsVY3MLHsj9D0CZ014/Fv/QlG59P+9CobUZ7xECJ/V3USG0Ob9CiE5LjReEZUzNF2l7eBw=="


def test_dsse_vector_signatures_reproduce_and_verify() -> None:
    keys = _rfc8032_keys()
    body = base64.b64decode(TINY_STATEMENT_B64)
    for name, published in (("A", SIG_A), ("B", SIG_B)):
        ours = sign_dsse(body, IN_TOTO_PAYLOAD_TYPE, keys[name]).signatures[0].sig
        assert base64.b64encode(ours).decode() == published
    envelope = Envelope.from_dict(
        {
            "payload": TINY_STATEMENT_B64,
            "payloadType": IN_TOTO_PAYLOAD_TYPE,
            "signatures": [{"sig": SIG_A, "keyid": "A"}, {"sig": SIG_B, "keyid": "B"}],
        }
    )
    trusted = {k: v.public_key for k, v in keys.items()}
    assert verify_dsse(envelope, trusted, threshold=2) == {"A", "B"}
    # without keyids (an optional hint) every trusted key is tried
    bare = Envelope(
        payload=envelope.payload,
        payload_type=envelope.payload_type,
        signatures=tuple(certify.DsseSignature(sig=s.sig) for s in envelope.signatures),
    )
    assert verify_dsse(bare, trusted, threshold=2) == {"A", "B"}
    # one key signing twice is one key
    twice = Envelope(
        payload=envelope.payload,
        payload_type=envelope.payload_type,
        signatures=(envelope.signatures[0], envelope.signatures[0]),
    )
    with pytest.raises(CertificateInvalid):
        verify_dsse(twice, trusted, threshold=2)
    # the signature binds the type: the same signature under another type fails
    swapped = Envelope(
        payload=envelope.payload,
        payload_type="application/vnd.example.other+json",
        signatures=envelope.signatures,
    )
    with pytest.raises(CertificateInvalid):
        verify_dsse(swapped, trusted)


def test_dsse_accepts_url_safe_base64_but_only_canonical_encodings() -> None:
    key = _rfc8032_keys()["A"]
    body = bytes([0xFB, 0xFF, 0xBF, 0x3E, 0x3F])
    env = sign_dsse(body, IN_TOTO_PAYLOAD_TYPE, key)
    url: dict[str, Any] = {
        "payload": base64.urlsafe_b64encode(body).decode(),
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "signatures": [{"sig": base64.urlsafe_b64encode(env.signatures[0].sig).decode()}],
    }
    assert "-" in url["payload"] and "_" in url["payload"]
    parsed = Envelope.from_dict(url)
    assert parsed.payload == body and parsed.signatures[0].sig == env.signatures[0].sig
    assert verify_dsse(parsed, {key.keyid: key.public_key}) == {key.keyid}
    unpadded = dict(url, payload=url["payload"].rstrip("="))
    assert Envelope.from_dict(unpadded).payload == body
    # "aGk=" is "hi"; "aGl=" decodes to the same bytes with non-zero padding bits
    assert Envelope.from_dict(dict(url, payload="aGk")).payload == b"hi"
    for bad in ("aGl=", "aG k=", "aG=k", "a+-k", "aGk==", 7):
        with pytest.raises(BadCertificateInput):
            Envelope.from_dict({"payload": bad, "payloadType": "t", "signatures": [{"sig": ""}]})


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=256), payload_type=st.text(max_size=40), flip=st.integers(0, 10_000))
def test_dsse_round_trip_and_any_payload_flip_fails(
    body: bytes, payload_type: str, flip: int
) -> None:
    key = SigningKey.from_private_bytes(GOLDEN_SEED)
    env = Envelope.from_dict(sign_dsse(body, payload_type, key).to_dict())
    assert env.payload == body and env.payload_type == payload_type
    assert verify_dsse(env, {key.keyid: key.public_key}) == {key.keyid}
    if body:
        i = flip % len(body)
        changed = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1 :]
        forged = Envelope(payload=changed, payload_type=payload_type, signatures=env.signatures)
        with pytest.raises(CertificateInvalid):
            verify_dsse(forged, {key.keyid: key.public_key})


# --- signing keys --------------------------------------------------------------------


def test_key_file_is_created_0600_with_public_pem(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "certificate.key"
    key = SigningKey.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in path.read_bytes()
    pub = Path(str(path) + ".pub").read_bytes()
    assert pub == key.public_key_pem
    assert certify.keyid_of(load_public_key_pem(pub)) == key.keyid
    raw = key.public_key.public_bytes_raw()
    assert key.keyid == "sha256:" + hashlib.sha256(raw).hexdigest()
    again = SigningKey.load_or_create(path)
    assert again.keyid == key.keyid
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_key_file_public_half_is_repaired_and_loose_modes_refused(tmp_path: Path) -> None:
    path = tmp_path / "certificate.key"
    key = SigningKey.load_or_create(path)
    pub = Path(str(path) + ".pub")
    pub.write_bytes(SigningKey.generate().public_key_pem)
    SigningKey.load_or_create(path)
    assert pub.read_bytes() == key.public_key_pem
    os.chmod(path, 0o640)
    with pytest.raises(BadInput):
        SigningKey.load_or_create(path)
    os.chmod(path, 0o600)
    path.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    with pytest.raises(BadInput):
        SigningKey.load_or_create(path)
    with pytest.raises(BadCertificateInput):
        load_public_key_pem(b"garbage")
    with pytest.raises(BadInput):
        SigningKey.from_private_bytes(b"short")


# --- statement and schema ------------------------------------------------------------


def test_round_trip_sign_verify(key: SigningKey, statement: dict[str, Any]) -> None:
    envelope = sign_statement(statement, key)
    assert envelope["payloadType"] == IN_TOTO_PAYLOAD_TYPE
    assert envelope["signatures"][0]["keyid"] == key.keyid
    assert base64.b64decode(envelope["payload"]) == canonical_json(statement)
    assert verify_envelope(envelope, {key.keyid: key.public_key}) == statement
    report = _verify(envelope, key, lookup_of(statement, envelope))
    assert report.ok, report.to_dict()
    assert [c.name for c in report.checks] == list(CHECK_NAMES)
    assert report.statement == statement
    # deterministic: Ed25519 signs the same canonical bytes identically
    assert sign_statement(copy.deepcopy(statement), key) == envelope


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_golden_certificate_is_byte_identical(key: SigningKey, version: str) -> None:
    statement = _golden(version)
    golden = (GOLDEN / f"certificate_{version}.dsse.json").read_bytes()
    assert canonical_json(sign_statement(statement, key)) + b"\n" == golden
    assert (GOLDEN / f"certificate_{version}.pub.pem").read_bytes() == key.public_key_pem
    public = load_public_key_pem((GOLDEN / f"certificate_{version}.pub.pem").read_bytes())
    assert verify_envelope(json.loads(golden), {key.keyid: public}) == statement


def test_a_v1_certificate_still_verifies_and_says_it_is_v1(
    key: SigningKey, statement_v1: dict[str, Any]
) -> None:
    envelope = json.loads((GOLDEN / "certificate_v1.dsse.json").read_bytes())
    report = _verify(envelope, key, lookup_of(statement_v1, envelope))
    assert report.ok, report.to_dict()
    assert statement_v1["predicateType"] == PREDICATE_TYPE_V1
    assert report.checks[2].detail == "in-toto Statement v1, certificate v1 predicate"
    assert report.checks[3].detail.startswith("predicate matches schema v1")
    # its label is one v2 no longer issues, and it is checked by v1's rules only
    assert statement_v1["predicate"]["classification"] == "decision-flips"
    assert predicate_problems(statement_v1["predicate"], PREDICATE_TYPE_V1) == []
    assert predicate_problems(statement_v1["predicate"]) != []  # not a v3 predicate
    for version in ("v2", "v3"):
        golden = _golden(version)
        report = _verify(sign_statement(golden, key), key, lookup_of(golden, None))
        assert all(check.ok for check in report.checks[:4]), report.to_dict()
        assert report.checks[2].detail == f"in-toto Statement v1, certificate {version} predicate"


def test_build_statement_shape(key: SigningKey, statement: dict[str, Any]) -> None:
    built = build_statement(
        specimen_id="spc-procurement-0001",
        manifest_digest="sha256:" + statement["subject"][0]["digest"]["sha256"],
        predicate=statement["predicate"],
    )
    assert built == statement
    assert built["predicateType"] == PREDICATE_TYPE
    with pytest.raises(ValueError):
        build_statement(specimen_id="s", manifest_digest="abc", predicate={})


def test_schema_rejects_unknown_top_level_key(statement: dict[str, Any]) -> None:
    predicate = dict(statement["predicate"], influence_score=0.9)
    assert predicate_problems(predicate) == ["/: additionalProperties"]


_WRONG_TYPES: list[tuple[str, Any]] = [
    ("request", "spc-1"),
    ("baseline", True),
    ("intervention", []),
    ("samples", 20),
    ("effect", "large"),
    ("placebo", 1),
    ("classification", 3),
    ("classification", "Decision Flips!"),
    ("auditability", None),
    ("not_established", "nothing"),
    ("environment", ["bubblewrap"]),
    ("lineage", {"kind": "specimen"}),
    ("grant", "local"),
    ("ledger", None),
    ("issued_at", "yesterday"),
    ("issuer", "me"),
]


@pytest.mark.parametrize(("field", "value"), _WRONG_TYPES)
def test_schema_rejects_wrong_top_level_types(
    statement: dict[str, Any], field: str, value: Any
) -> None:
    predicate = dict(statement["predicate"], **{field: value})
    assert predicate_problems(predicate)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("effect", "flip_rate"), "0.65"),
        (("effect", "flip_rate"), 1.5),
        (("effect", "layer_changes", "score"), 20),
        (("served_by", 0, "record"), 20),
        (("baseline", "layers", "score", "delta"), 3.0),
        (("disclosure", "bits"), -1.0),
        (("disclosure", "terms", 0, "field"), 7),
        (("effect", "delta_interval"), [0.0]),
        (("baseline", "reproduced"), "yes"),
        (("baseline", "layers", "score", "ok"), 1),
        (("intervention", "unchanged_digest_equal"), "true"),
        (("intervention", "unchanged_digest_before"), "sha256:short"),
        (("samples", "count"), 20.5),
        (("placebo", "flips"), -1),
        (("auditability", "class"), "admissible"),
        (("ledger", "specimen_entry_index"), "3"),
        (("request", "strategy"), "DELETE"),
        (("grant", "accessor"), 42),
    ],
)
def test_schema_rejects_wrong_nested_types(
    statement: dict[str, Any], path: tuple[Any, ...], value: Any
) -> None:
    predicate = copy.deepcopy(statement["predicate"])
    target = predicate
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    assert predicate_problems(predicate)


@pytest.mark.parametrize("field", sorted(certify.PREDICATE_SCHEMA["required"]))
def test_schema_requires_every_top_level_key(statement: dict[str, Any], field: str) -> None:
    predicate = dict(statement["predicate"])
    del predicate[field]
    assert predicate_problems(predicate) == ["/: required"]


def test_audit_ending_before_baseline_is_valid_with_nulls(
    statement: dict[str, Any], statement_v1: dict[str, Any]
) -> None:
    nulls = {
        "baseline": None, "intervention": None, "samples": None, "effect": None,
        "placebo": None, "environment": None, "grant": None,
        "auditability": {
            "class": "observable-only",
            "first_unverifiable_step": 2,
            "live_state_fields": ["/lock_id"],
            "reason": "reserve_lock token expired before the divergence",
        },
    }  # fmt: skip
    v1 = dict(statement_v1["predicate"], classification="refused", **nulls)
    assert predicate_problems(v1, PREDICATE_TYPE_V1) == []
    v3 = dict(
        statement["predicate"], classification="observable-only",
        recorded_seed=None, served_by=None, substituted=None, **nulls,
    )  # fmt: skip
    assert predicate_problems(v3) == []
    # v2 and v3 labels are closed: v1's free label is refused
    assert predicate_problems(dict(v3, classification="refused")) == ["/classification: enum"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"baseline": {"reproduced": False, "layers": {}}}, "without a reproduced baseline"),
        ({"baseline": None}, "without a reproduced baseline"),
        ({"placebo": None}, "without a passed placebo"),
        ({"placebo": {"passed": False, "max_abs_delta": 0.02, "flips": 1}}, "passed placebo"),
        ({"samples": {"count": 20, "seed": 41, "seeds": "41..61"}}, "seed..seed+count-1"),
        ({"samples": {"count": 19, "seed": 41, "seeds": "41..59"}}, "do not sum to the sample"),
    ],
)
def test_rules_beyond_the_schema(
    statement_v2: dict[str, Any], change: dict[str, Any], problem: str
) -> None:
    predicate = dict(statement_v2["predicate"], **change)
    assert any(problem in p for p in predicate_problems(predicate, PREDICATE_TYPE_V2))


def test_rules_on_intervention_and_effect(statement_v2: dict[str, Any]) -> None:
    base = statement_v2["predicate"]

    def with_(section: str, **changes: Any) -> dict[str, Any]:
        return dict(base, **{section: dict(base[section], **changes)})

    def predicate_problems(predicate: dict[str, Any]) -> list[str]:
        return certify.predicate_problems(predicate, PREDICATE_TYPE_V2)

    after = "hmac-sha256:" + "0" * 64
    assert predicate_problems(with_("intervention", unchanged_digest_after=after)) == [
        "/intervention/unchanged_digest_equal: contradicts the digests"
    ]
    unequal = with_("intervention", unchanged_digest_after=after, unchanged_digest_equal=False)
    assert predicate_problems(unequal) == ["/effect: reported without unchanged-digest equality"]
    extra = with_("intervention", actual_changes=["/model/revision", "/template"])
    assert predicate_problems(extra) == [
        "/effect: reported although actual changes differ from declared"
    ]
    observable = with_("auditability", **{"class": "observable-only"})
    assert predicate_problems(observable) == [
        "/effect: reported for an observable-only audit",
        "/auditability/class: contradicts the classification",
    ]
    assert "/effect: a delta is not on the declared resolution" in predicate_problems(
        with_("effect", mean_delta=-0.0395, delta_interval=[-0.044, -0.034])
    )
    histogram = dict(base["effect"]["histogram"], edges=base["effect"]["histogram"]["edges"][1:])
    assert "/effect/histogram: edges do not bound the counts' bins in order" in (
        predicate_problems(with_("effect", histogram=histogram))
    )
    assert predicate_problems(with_("disclosure", bits=base["disclosure"]["bits"] - 1)) == [
        "/disclosure/bits: is not the sum of its terms"
    ]
    assert "/effect/flip_interval: is not the exact interval for the flips" in (
        predicate_problems(with_("effect", flip_interval=[0.0, 0.5]))
    )
    assert "/effect/equivalence/delta_interval: is not nested around the mean" in (
        predicate_problems(with_("effect", delta_interval=[-0.03, -0.01]))
    )


_ANSWER = {"boundaries": ["m"], "samples": 13}


def _tampered(statement: dict[str, Any], change: Any) -> dict[str, Any]:
    predicate = copy.deepcopy(statement["predicate"])
    change(predicate)
    return predicate


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # a label the reported intervals and tolerances do not support
        (lambda p: p.update(classification="equivalent"), "does not follow from the intervals"),
        (lambda p: p.update(classification="inconclusive"), "does not follow from the intervals"),
        (lambda p: p["effect"].update(flip_tolerance=0.0), ""),  # still influential: valid
        (lambda p: p["effect"].update(flips=1, flip_rate=0.05), "flip_interval"),
        (lambda p: p["effect"].update(score_tolerance=0.5), "differs from the request"),
        (lambda p: p["effect"]["mde"].update(flip_rate=0.01), "mde/flip_rate"),
        (lambda p: p["sample_rows"].pop(), "seeds are not seed..seed+count-1"),
        (lambda p: p["sample_rows"][0].__setitem__(3, False), "flip contradicts"),
        (lambda p: p["sample_rows"][19].__setitem__(1, "other"), "flip contradicts"),
        (
            lambda p: p["sample_rows"].__setitem__(19, [60, "other", "other", False]),
            "differ from /effect/baseline_rate",
        ),
        (lambda p: p["recorded_seed"].update(flip=False), "differs from its sample row"),
        (
            lambda p: p.update(recorded_seed={"seed": 41, "sampled": False}),
            "contradicts the sampled",
        ),
        (lambda p: p["recorded_seed"].update(sampled=False), "contradicts the sampled"),
        # run on its own at preparation (outside the sampled seeds): valid when consistent
        (lambda p: p["recorded_seed"].update(seed=7, sampled=False), ""),
        (
            lambda p: p["recorded_seed"].update(seed=7, sampled=False, flip=False),
            "/recorded_seed: a flip contradicts",
        ),
        (lambda p: p.update(substitute_fidelity={"m": {"checked": 1, "faithful": True}}), ""),
        (
            lambda p: (
                p["served_by"][0].update(call="main/m#0", record=19, substitute=1),
                p.update(substitute_fidelity={"m": {"checked": 1, "faithful": False}}),
            ),
            "an unfaithful substitute served",
        ),  # fmt: skip
        (
            lambda p: p.update(substitute_fidelity={"m": {"checked": 0, "faithful": True}}),
            "/substitute_fidelity",
        ),
        (lambda p: p["served_by"][0].update(record=19), "do not sum to the sample count"),
        (lambda p: p["served_by"][0].update(intervention=1, absent=0, record=19), "baseline"),
        (lambda p: p["served_by"].append(dict(p["served_by"][0])), "appears twice"),
        (
            lambda p: p["served_by"].append(
                dict(
                    p["served_by"][-1],
                    call="new calls",
                    record=20,
                    absent=0,
                    substitute=0,
                    unused=0,
                    intervention=0,
                    unservable=0,
                )
            ),
            "does not know",
        ),  # fmt: skip
        (
            lambda p: p["served_by"].append(
                dict(
                    p["served_by"][-1],
                    call="ambient:env",
                    unservable=20,
                    absent=0,
                    record=0,
                    substitute=0,
                    unused=0,
                    intervention=0,
                )
            ),
            "ambient input",
        ),  # fmt: skip
        (lambda p: p["effect"].update(outcome="categorical"), "numeric fields"),
        # substitute answers to requests the record does not hold (the golden one has 13
        # samples of intervened new calls served by substitute, reported before these)
        (lambda p: p.update(substitute_answers=_ANSWER), "rests on a substitute's answers"),
        (lambda p: p.update(substitute_answers=_ANSWER), "does not follow from the intervals"),
        (
            lambda p: (
                p.update(substitute_answers=_ANSWER),
                p["request"].update(authoritative_substitutes=["m"]),
            ),
            "",
        ),  # fmt: skip
        (
            lambda p: p.update(substitute_answers=_ANSWER, classification="inconclusive"),
            "",
        ),  # capped: inconclusive is what follows
        (
            lambda p: p.update(substitute_answers=dict(_ANSWER, samples=14)),
            "exceeds the samples served by substitute",
        ),
        (lambda p: p.update(substitute_answers=dict(_ANSWER, boundaries=["m", "m"])), "unique"),
        (lambda p: p.update(substitute_answers=dict(_ANSWER, arm="intervened")), "/substitute"),
        (lambda p: p.update(substitute_answers=dict(_ANSWER, samples=0)), "exactly when"),
        (lambda p: p.update(substitute_answers={"boundaries": [], "samples": 2}), "exactly when"),
        (lambda p: p.update(substitute_answers={"boundaries": [], "samples": 0}), ""),
        (
            lambda p: p.update(
                classification="baseline-not-reproduced",
                effect=None,
                baseline=dict(p["baseline"], reproduced=False),
            ),
            "not-assessed is for an unreproduced baseline",
        ),
    ],
)
def test_v2_rules_tie_the_label_and_counts_to_what_is_reported(
    statement_v2: dict[str, Any], change: Any, problem: str | None
) -> None:
    problems = predicate_problems(_tampered(statement_v2, change), PREDICATE_TYPE_V2)
    if not problem:
        assert problems == []
        return
    assert any(problem in p for p in problems), problems


def test_a_confident_label_on_an_unauthorised_substitutes_answers_fails_verification(
    key: SigningKey, statement: dict[str, Any]
) -> None:
    # the golden certificate verifies: it reports no substitute answers, so rule 8 is idle
    golden = sign_statement(statement, key)
    assert _verify(golden, key, lookup_of(statement, golden)).ok
    # an issuer that kept "influential" while its served-by shows the intervened arm's
    # new calls answered by an unauthorised substitute is caught offline
    forged = copy.deepcopy(statement)
    forged["predicate"]["substitute_answers"] = _ANSWER
    envelope = _sign_raw(forged, key)
    report = _verify(envelope, key, lookup_of(statement, envelope))
    assert not report.ok and report.first_failure is not None
    assert "rests on a substitute's answers" in report.first_failure.detail
    # the same answers from a substitute the request declares authoritative verify
    forged["predicate"]["request"]["authoritative_substitutes"] = ["m"]
    envelope = _sign_raw(forged, key)
    assert _verify(envelope, key, lookup_of(statement, envelope)).ok


def test_sign_statement_refuses_invalid_and_never_echoes_values(
    key: SigningKey, statement: dict[str, Any]
) -> None:
    canary = "CANARY-7f3a9e"
    bad = copy.deepcopy(statement)
    bad["predicate"]["effect"]["flip_rate"] = canary
    bad["predicate"]["request"][canary] = {canary: float("nan")}
    bad["predicate"][canary] = canary
    with pytest.raises(PredicateInvalid) as caught:
        sign_statement(bad, key)
    assert canary not in str(caught.value) and canary.lower() not in str(caught.value)
    assert canary not in repr(caught.value.problems)
    other = copy.deepcopy(statement)
    other["predicate"]["issuer"] = SigningKey.generate().keyid
    with pytest.raises(PredicateInvalid, match="issuer"):
        sign_statement(other, key)
    nan = copy.deepcopy(statement)
    nan["predicate"]["request"]["extra"] = float("nan")
    with pytest.raises(PredicateInvalid):
        sign_statement(nan, key)


# --- verification: a named failing check for each kind of tampering -------------------


def test_every_character_of_payload_and_signature_is_bound(
    key: SigningKey, statement: dict[str, Any]
) -> None:
    envelope = sign_statement(statement, key)
    lookup = lookup_of(statement, envelope)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    checked = 0
    for field in ("payload", "sig"):
        holder = envelope if field == "payload" else envelope["signatures"][0]
        text = holder[field]
        for i, ch in enumerate(text):
            if ch == "=":
                continue
            replacement = alphabet[(alphabet.index(ch) + 1) % 64]
            tampered = copy.deepcopy(envelope)
            target = tampered if field == "payload" else tampered["signatures"][0]
            target[field] = text[:i] + replacement + text[i + 1 :]
            assert _failed_step(_verify(tampered, key, lookup)) in ("envelope", "signature")
            checked += 1
    assert checked > 3000


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.update(payloadType="application/json"),
        lambda e: e.update(extra="x"),
        lambda e: e.pop("signatures"),
        lambda e: e.update(signatures=[]),
        lambda e: e["signatures"][0].update(sig="!!"),
        lambda e: e["signatures"][0].update(note="x"),
        lambda e: e.update(payload=e["payload"] + "A"),
        lambda e: e.update(payloadType="application/vnd.in-toto+json\ud800"),
        lambda e: e["signatures"][0].update(keyid="\udfff"),
    ],
)
def test_step1_envelope_tampering(key: SigningKey, statement: dict[str, Any], mutate: Any) -> None:
    envelope = sign_statement(statement, key)
    tampered = copy.deepcopy(envelope)
    mutate(tampered)
    assert _failed_step(_verify(tampered, key, lookup_of(statement, envelope))) == "envelope"
    with pytest.raises(CertificateInvalid):
        verify_envelope(tampered, {key.keyid: key.public_key})


def test_step2_untrusted_key_and_misleading_keyid(
    key: SigningKey, statement: dict[str, Any]
) -> None:
    envelope = sign_statement(statement, key)
    lookup = lookup_of(statement, envelope)
    stranger = SigningKey.generate()
    report = verify_certificate(envelope, public_key=stranger.public_key, ledger_lookup=lookup)
    assert _failed_step(report) == "signature"
    assert [c.ok for c in report.checks] == [True, False, False, False, False, False]
    assert report.checks[2].detail == "not run: step 2 failed"
    # a forged statement with the issuer set to the trusted key, signed by another key
    forged = _sign_raw(statement, stranger)
    forged["signatures"][0]["keyid"] = key.keyid
    assert _failed_step(_verify(forged, key, lookup)) == "signature"
    with pytest.raises(CertificateInvalid) as caught:
        verify_envelope(forged, {key.keyid: key.public_key})
    assert str(caught.value) == "certificate invalid"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(_type="https://in-toto.io/Statement/v0.1"),
        lambda s: s.update(predicateType="https://slsa.dev/provenance/v1"),
        lambda s: s["subject"].append(dict(s["subject"][0], name="specimen:other")),
        lambda s: s["subject"][0].update(name="spc-procurement-0001"),
        lambda s: s["subject"][0]["digest"].update(sha512="00"),
        lambda s: s["subject"][0]["digest"].update(sha256="AB" * 32),
        lambda s: s.update(extra=1),
    ],
)
def test_step3_statement_tampering(key: SigningKey, statement: dict[str, Any], mutate: Any) -> None:
    tampered = copy.deepcopy(statement)
    mutate(tampered)
    envelope = _sign_raw(tampered, key)
    assert _failed_step(_verify(envelope, key, lookup_of(statement, envelope))) == "statement"


def test_step3_payload_must_be_canonical_strict_json(
    key: SigningKey, statement: dict[str, Any]
) -> None:
    lookup = lookup_of(statement, None)
    display = json.dumps(statement, indent=2).encode()
    report = _verify(_sign_raw(None, key, payload=display), key, lookup)
    assert _failed_step(report) == "statement"
    assert report.first_failure is not None and "canonical" in report.first_failure.detail
    duplicate = b'{"_type":"a","_type":"b"}'
    assert (
        _failed_step(_verify(_sign_raw(None, key, payload=duplicate), key, lookup)) == "statement"
    )
    nan = canonical_json(statement).replace(b'"max_abs_delta":0', b'"max_abs_delta":NaN')
    assert _failed_step(_verify(_sign_raw(None, key, payload=nan), key, lookup)) == "statement"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.update(influence_score=0.9),
        lambda p: p["effect"].update(flip_rate="0.65"),
        lambda p: p["baseline"].update(reproduced=False),
        lambda p: p["request"].update(specimen="spc-other"),
        lambda p: p.update(issuer="sha256:" + "0" * 64),
        # figures the rules cannot evaluate fail the step, they do not raise
        lambda p: p["effect"].update(flips=21),  # of 20 samples
        lambda p: p["disclosure"].update(resolution=5e-324),
    ],
)
def test_step4_predicate_tampering(key: SigningKey, statement: dict[str, Any], mutate: Any) -> None:
    tampered = copy.deepcopy(statement)
    mutate(tampered["predicate"])
    envelope = _sign_raw(tampered, key)
    assert _failed_step(_verify(envelope, key, lookup_of(statement, envelope))) == "predicate"
    with pytest.raises(CertificateInvalid):
        verify_envelope(envelope, {key.keyid: key.public_key})


def test_step5_subject_must_match_the_ledger(key: SigningKey, statement: dict[str, Any]) -> None:
    envelope = sign_statement(statement, key)
    good = lookup_of(statement, envelope)
    (specimen_id, (digest, index, entry_hash)), = good.specimens.items()  # fmt: skip
    variants = [
        {},
        {specimen_id: ("sha256:" + "1" * 64, index, entry_hash)},
        {specimen_id: (digest, index + 1, entry_hash)},
        {specimen_id: (digest, index, "sha256:" + "2" * 64)},
        {"spc-other": (digest, index, entry_hash)},
    ]
    for specimens in variants:
        lookup = StaticLedgerLookup(specimens=specimens, certificates=good.certificates)
        report = _verify(envelope, key, lookup)
        assert _failed_step(report) == "subject"
        assert [c.ok for c in report.checks][:4] == [True] * 4


def test_step6_ledger_must_record_this_envelope(key: SigningKey, statement: dict[str, Any]) -> None:
    envelope = sign_statement(statement, key)
    good = lookup_of(statement, envelope)
    missing = StaticLedgerLookup(specimens=good.specimens)
    assert _failed_step(_verify(envelope, key, missing)) == "ledger_entry"
    early = StaticLedgerLookup(
        specimens=good.specimens,
        certificates={envelope_digest(envelope): (2, "sha256:" + "e" * 64)},
    )
    assert _failed_step(_verify(envelope, key, early)) == "ledger_entry"
    # the same signed bytes re-encoded are a different envelope from the one recorded
    reencoded = copy.deepcopy(envelope)
    reencoded["signatures"][0].pop("keyid")
    report = _verify(reencoded, key, good)
    assert _failed_step(report) == "ledger_entry"
    assert all(c.ok for c in report.checks[:5])


def test_report_is_metadata_only(key: SigningKey, statement: dict[str, Any]) -> None:
    envelope = sign_statement(statement, key)
    tampered = copy.deepcopy(statement)
    tampered["predicate"]["request"]["specimen"] = "CANARY-specimen"
    tampered["predicate"]["effect"]["flip_rate"] = "CANARY-rate"
    report = _verify(_sign_raw(tampered, key), key, lookup_of(statement, envelope))
    text = json.dumps(report.to_dict())
    assert "CANARY" not in text and "canary" not in text
    assert _failed_step(report) == "predicate"


# --- independent implementation: securesystemslib -----------------------------------


def _sslib_key(key: SigningKey) -> SSlibKey:
    return SSlibKey.from_crypto(key.public_key, keyid=key.keyid)


def test_securesystemslib_verifies_our_envelope(key: SigningKey, statement: dict[str, Any]) -> None:
    envelope = sign_statement(statement, key)
    theirs = SslibEnvelope.from_dict(copy.deepcopy(envelope))
    assert theirs.payload == canonical_json(statement)
    assert theirs.pae() == pae(IN_TOTO_PAYLOAD_TYPE, canonical_json(statement))
    assert set(theirs.verify([_sslib_key(key)], 1)) == {key.keyid}
    tampered = copy.deepcopy(envelope)
    tampered["payloadType"] = "application/json"
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(tampered).verify([_sslib_key(key)], 1)
    stranger = SigningKey.generate()
    with pytest.raises(VerificationError):
        theirs.verify([SSlibKey.from_crypto(stranger.public_key, keyid=key.keyid)], 1)


def test_we_verify_a_securesystemslib_envelope(key: SigningKey, statement: dict[str, Any]) -> None:
    private = Ed25519PrivateKey.from_private_bytes(GOLDEN_SEED)
    signer = CryptoSigner(private, _sslib_key(key))
    theirs = SslibEnvelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, {})
    theirs.sign(signer)
    envelope = theirs.to_dict()
    assert verify_envelope(envelope, {key.keyid: key.public_key}) == statement
    assert _verify(envelope, key, lookup_of(statement, envelope)).ok
    # and their envelope is byte-identical to ours: same PAE, deterministic Ed25519
    assert envelope == sign_statement(statement, key)
    other = SslibEnvelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, {})
    impostor = Ed25519PrivateKey.generate()
    claimed = SSlibKey.from_crypto(impostor.public_key(), keyid=key.keyid)  # misleading keyid
    other.sign(CryptoSigner(impostor, claimed))
    with pytest.raises(CertificateInvalid):
        verify_envelope(other.to_dict(), {key.keyid: key.public_key})


def _served(p: dict[str, Any], arm: str, calls: str) -> dict[str, Any]:
    row: dict[str, Any] = next(r for r in p["served_by"] if (r["arm"], r["calls"]) == (arm, calls))
    return row


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda p: None, ""),
        # the TOST interval and the minimum detectable delta are derived, not stated
        (lambda p: p["effect"]["equivalence"].update(delta_interval=[-0.048, -0.033]), "implies"),
        (lambda p: p["effect"]["mde"].update(delta=0.013), "/effect/mde/delta: is not the one"),
        (lambda p: p["effect"].update(mean_delta=-0.02), "does not hold the mean delta"),
        (lambda p: p["effect"].update(histogram=None), "/effect: anyOf"),
        (lambda p: p.update(sample_rows=[]), "/: additionalProperties"),
        (lambda p: p["effect"]["layer_changes"].update(score=20), "/effect: anyOf"),
        (lambda p: p["recorded_seed"].update(delta=0.0), "/recorded_seed: anyOf"),
        (lambda p: p["recorded_seed"].update(flip=False), "a flip contradicts"),
        # coarse served-by rows: one mark for all cells, or several for some of them
        (lambda p: _served(p, "baseline", "recorded").update(record="some"), "do not cover"),
        (lambda p: _served(p, "baseline", "recorded").update(unused="some"), "do not cover"),
        (lambda p: _served(p, "baseline", "recorded").update(record=20), "/served_by: anyOf"),
        (
            lambda p: _served(p, "baseline", "recorded").update(record="some", intervention="some"),
            "the baseline arm has no intervened call",
        ),
        (lambda p: _served(p, "intervened", "new").update(record="some"), "does not know"),
        (lambda p: p["served_by"].append(dict(p["served_by"][0])), "appears twice"),
        # substituted: exactly the recorded boundaries a substitute served, never unfaithful
        (lambda p: p.update(substituted=["approval"]), "contradicts the recorded calls"),
        (lambda p: p.update(substituted=None), "present exactly with the served-by table"),
        (
            lambda p: (
                _served(p, "placebo", "recorded").update(substitute="some"),
                p.update(substituted=["approval"]),
            ),
            "",
        ),  # fmt: skip
        (
            lambda p: (
                _served(p, "placebo", "recorded").update(substitute="some"),
                p.update(substituted=["approval"]),
                p.update(substitute_fidelity={"approval": {"checked": 2, "faithful": False}}),
            ),
            "an unfaithful substitute served",
        ),  # fmt: skip
        (
            lambda p: (
                _served(p, "placebo", "recorded").update(substitute="some"),
                p.update(substituted=["before-authority"]),
                p["request"].update(from_cut="before-authority"),
                p.update(
                    cut={
                        "name": "before-authority",
                        "call_id": "main/before-authority#0",
                        "calls_before": 2,
                    }
                ),
            ),
            "the cut was not served from the record",
        ),  # fmt: skip
        # substitute answers need a substitute (or unservable) mark somewhere
        (
            lambda p: (
                p.update(substitute_answers=_ANSWER),
                p["request"].update(authoritative_substitutes=["m"]),
            ),
            "",
        ),  # fmt: skip
        (
            lambda p: (
                p.update(substitute_answers=dict(_ANSWER, samples=21)),
                p["request"].update(authoritative_substitutes=["m"]),
            ),
            "exceeds the samples served by substitute",
        ),  # fmt: skip
    ],
)
def test_v3_rules_read_coarse_figures_and_derive_the_rest(
    statement: dict[str, Any], change: Any, problem: str
) -> None:
    assert statement["predicateType"] == PREDICATE_TYPE
    problems = predicate_problems(_tampered(statement, change))
    if not problem:
        assert problems == []
        return
    assert any(problem in p for p in problems), problems
