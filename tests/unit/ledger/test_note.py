"""C2SP signed notes and checkpoints: the Go reference implementation's example key and
note reproduced byte for byte (Ed25519 is deterministic), and what a verifier refuses."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.certificates.tlog import (
    Checkpoint,
    NoteInvalid,
    NoteVerifier,
    checkpoint_text,
    open_note,
    parse_checkpoint,
    sign_note,
)

# golang.org/x/mod/sumdb/note's documented example
VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
SIGNATURE = (
    "\u2014 PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def peter() -> Ed25519PrivateKey:
    seed = base64.b64decode(SKEY.split("+", 4)[4])  # the key's base64 may hold '+' too
    assert seed[:1] == b"\x01"
    return Ed25519PrivateKey.from_private_bytes(seed[1:])


def test_the_reference_note_byte_for_byte() -> None:
    key = peter()
    verifier = NoteVerifier("PeterNeumann", key.public_key())
    assert verifier.encode() == VKEY
    assert NoteVerifier.parse(VKEY) == verifier
    note = sign_note(TEXT, verifier, key.sign)
    assert note == TEXT + "\n" + SIGNATURE
    text, signers = open_note(note, [verifier])
    assert (text, signers) == (TEXT, [verifier])


def test_unknown_signers_are_ignored_and_a_note_needs_a_trusted_one() -> None:
    key, other = peter(), Ed25519PrivateKey.generate()
    trusted = NoteVerifier("PeterNeumann", key.public_key())
    witness = NoteVerifier("witness", other.public_key())
    cosignature = sign_note(TEXT, witness, other.sign).split("\n\n")[1]
    cosigned = sign_note(TEXT, trusted, key.sign) + cosignature
    assert open_note(cosigned, [trusted]) == (TEXT, [trusted])
    with pytest.raises(NoteInvalid, match="no trusted key"):
        open_note(sign_note(TEXT, witness, other.sign), [trusted])
    # the same name with another key: not the trusted key, so not a signature of it
    with pytest.raises(NoteInvalid, match="no trusted key"):
        impostor = NoteVerifier("PeterNeumann", other.public_key())
        open_note(sign_note(TEXT, impostor, other.sign), [trusted])
    # a signer that signs with another key than it names is refused before any note
    with pytest.raises(NoteInvalid, match="not the signer"):
        sign_note(TEXT, trusted, other.sign)


@pytest.mark.parametrize(
    "note",
    [
        TEXT.replace("answer", "ANSWER") + "\n" + SIGNATURE,  # the text changed
        TEXT + "\n" + SIGNATURE.replace("x08go", "x08gp"),  # the signature changed
        TEXT + SIGNATURE,  # no blank line
        TEXT + "\n" + SIGNATURE.replace("\u2014", "-"),
        TEXT + "\n" + SIGNATURE.rstrip("\n"),
        "a\x01b\n\n" + SIGNATURE,
        "",
    ],
)
def test_malformed_or_altered_notes_are_refused(note: str) -> None:
    with pytest.raises(NoteInvalid):
        open_note(note, [NoteVerifier.parse(VKEY)])


@pytest.mark.parametrize(
    "vkey",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # ID mismatch
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # not Ed25519
        "PeterNeumann+c74f20a3",
        "PeterNeumann+c74f20a3+!!!!",
    ],
)
def test_bad_verifier_keys_are_refused(vkey: str) -> None:
    with pytest.raises(NoteInvalid):
        NoteVerifier.parse(vkey)


def test_a_checkpoint_round_trips_and_malformed_ones_are_refused() -> None:
    checkpoint = Checkpoint("example.com/log", 1234, bytes(range(32)))
    text = checkpoint_text(checkpoint)
    assert text == "example.com/log\n1234\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
    assert parse_checkpoint(text) == checkpoint
    assert parse_checkpoint(text + "extension line\n") == checkpoint
    for bad in (
        "example.com/log\n01\nAAEC\n",
        "example.com/log\n-1\n" + text.split("\n")[2] + "\n",
        "example.com/log\n12\nAAEC\n",
        "example.com/log\n12\n",
        "\n12\n" + text.split("\n")[2] + "\n",
    ):
        with pytest.raises(NoteInvalid):
            parse_checkpoint(bad)
