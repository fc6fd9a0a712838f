"""C2SP tlog-proof text (``ledger.certificates.tlog``): the specification's example
parses, a proof re-encodes to the same bytes, and every other spelling is refused."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.certificates.tlog import ProofInvalid, TlogProof, parse_proof, proof_text

NOTE = (
    "example.com/fancylog\n109482\nsFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n\n"
    "\u2014 example.com/fancylog hI2DJwAAAAA=\n"
)
HASHES = (
    "gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=",
    "B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=",
)


def _text(*lines: str) -> str:
    return "\n".join(lines) + "\n\n" + NOTE


def test_the_specifications_shape_parses_and_round_trips() -> None:
    text = _text("c2sp.org/tlog-proof@v1", "extra YWdl", "index 73894", *HASHES)
    proof = parse_proof(text)
    assert proof.index == 73894 and proof.extra == b"age" and proof.note == NOTE
    assert [base64.b64encode(h).decode() for h in proof.hashes] == list(HASHES)
    assert proof_text(proof) == text
    bare = parse_proof(_text("c2sp.org/tlog-proof@v1", "index 0"))
    assert (bare.index, bare.hashes, bare.extra) == (0, (), None)


@pytest.mark.parametrize(
    "lines",
    [
        ("c2sp.org/tlog-proof@v2", "index 1"),  # another version
        ("c2sp.org/tlog-proof@v1",),  # no index
        ("c2sp.org/tlog-proof@v1", "index 01"),  # a leading zero
        ("c2sp.org/tlog-proof@v1", "index -1"),
        ("c2sp.org/tlog-proof@v1", "index \u0661"),  # a digit, not an ASCII one
        ("c2sp.org/tlog-proof@v1", "index 1", HASHES[0].rstrip("=")),  # unpadded
        ("c2sp.org/tlog-proof@v1", "index 1", "AAAA"),  # 3 bytes, not 32
        ("c2sp.org/tlog-proof@v1", "index 1", *([HASHES[0]] * 65)),  # deeper than 2**64
        ("c2sp.org/tlog-proof@v1", "extra !!", "index 1"),
        ("c2sp.org/tlog-proof@v1", "index 1", "extra YWdl"),  # extra after the index
    ],
)
def test_other_spellings_are_refused(lines: tuple[str, ...]) -> None:
    with pytest.raises(ProofInvalid):
        parse_proof(_text(*lines))


def test_a_proof_has_its_checkpoint() -> None:
    for text in ("c2sp.org/tlog-proof@v1\nindex 1\n", "c2sp.org/tlog-proof@v1\nindex 1\n\n"):
        with pytest.raises(ProofInvalid):
            parse_proof(text)


@given(
    index=st.integers(min_value=0, max_value=2**63),
    hashes=st.lists(st.binary(min_size=32, max_size=32), max_size=64),
    extra=st.none() | st.binary(max_size=40),
)
def test_any_proof_round_trips(index: int, hashes: list[bytes], extra: bytes | None) -> None:
    proof = TlogProof(index=index, hashes=tuple(hashes), note=NOTE, extra=extra)
    assert parse_proof(proof_text(proof)) == proof
