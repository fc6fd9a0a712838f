"""A witness (C2SP tlog-witness ``add-checkpoint``) over HTTP, and the cosignatures it
returns (C2SP tlog-cosignature). Two ledgers under one log key fork after a common
prefix: the witness cosigns one history and refuses the other, whatever the forked log
submits (a stale size: 409; the same size with another root: 409; a proof from the size
it cosigned: 422)."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from enclave.witness import WitnessStore, create_witness_app
from ledger import Ledger
from ledger.certificates.tlog import (
    NoteInvalid,
    NoteVerifier,
    WitnessVerifier,
    cosign,
    cosigned_by,
    open_note,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette announces a future transport change
    from fastapi.testclient import TestClient

ORIGIN = "example.test/forking-log"
NOW = 1_765_000_000


class Log:
    """A ledger and the key that signs its checkpoints."""

    def __init__(self, path: Path, key: Ed25519PrivateKey) -> None:
        self.ledger = Ledger.open(f"sqlite:///{path}", clock=lambda: "2026-12-06T00:00:00Z")
        self.ledger.migrate()
        self.key = key
        self.verifier = NoteVerifier(ORIGIN, key.public_key())

    def append(self, tag: str, count: int) -> None:
        self.ledger.append_many([("note", tag, {"i": i}) for i in range(count)])

    def request(self, old: int) -> tuple[bytes, str]:
        """An add-checkpoint body from ``old``: a freshly signed note and its proof."""
        note = self.ledger.sign_checkpoint(
            origin=ORIGIN, signer=self.verifier, sign=self.key.sign
        ).note
        size = self.ledger.tree_root()[0]
        proof = self.ledger.prove_consistency(old, size) if 0 < old < size else []
        lines = "".join(base64.b64encode(h).decode() + "\n" for h in proof)
        return f"old {old}\n{lines}\n{note}".encode(), note


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Log, Log, TestClient, WitnessVerifier]]:
    log_key, witness_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    a, b = Log(tmp_path / "a.db", log_key), Log(tmp_path / "b.db", log_key)
    for log in (a, b):  # a common prefix: the same entries, byte for byte
        log.append("common", 3)
    witness = WitnessVerifier("witness.example.test/w1", witness_key.public_key())
    store = WitnessStore(tmp_path / "witness.db")
    app = create_witness_app(
        logs={ORIGIN: a.verifier},
        witness=witness,
        sign=witness_key.sign,
        store=store,
        clock=lambda: NOW,
    )
    with TestClient(app) as client:
        yield a, b, client, witness
    store.close()
    a.ledger.close()
    b.ledger.close()


def post(client: TestClient, body: bytes) -> tuple[int, str, str]:
    answer = client.post("/add-checkpoint", content=body)
    return answer.status_code, answer.text, answer.headers.get("content-type", "")


def test_the_witness_cosigns_one_history_of_a_forked_log(
    world: tuple[Log, Log, TestClient, WitnessVerifier],
) -> None:
    a, b, client, witness = world
    body, note = a.request(0)
    status, line, _ = post(client, body)
    assert status == 200
    # the cosignature verifies on the checkpoint, beside the log's own signature
    assert cosigned_by(note + line, [witness]) == [witness]
    assert open_note(note + line, [a.verifier])[1] == [a.verifier]
    # the two ledgers fork: each appends its own entries
    a.append("a-side", 2)
    b.append("b-side", 2)
    assert a.ledger.tree_root() != b.ledger.tree_root()
    assert post(client, a.request(3)[0])[0] == 200  # the witness follows history A
    # history B: from the size it knew (3), stale
    assert post(client, b.request(3)[0]) == (409, "5\n", "text/x.tlog.size")
    # from the witness's size, with B's root at that size: the same size, another root
    assert post(client, b.request(5)[0])[:2] == (409, "5\n")
    # B grows, and proves its growth from its own tree of 5: not A's tree of 5
    b.append("b-side", 2)
    status, _, _ = post(client, b.request(5)[0])
    assert status == 422
    # A goes on being cosigned
    a.append("a-side", 1)
    assert post(client, a.request(5)[0])[0] == 200


def test_refusals_follow_the_specification(
    world: tuple[Log, Log, TestClient, WitnessVerifier], tmp_path: Path
) -> None:
    a, _, client, _ = world
    body, note = a.request(0)
    # another log's origin: 404; a note not signed by the log's key: 403
    other = Log(tmp_path / "other.db", Ed25519PrivateKey.generate())
    other.append("x", 1)
    forged = other.request(0)[0]
    assert post(client, forged)[0] == 403  # same origin, another key
    renamed = forged.replace(ORIGIN.encode(), b"example.test/unknown")
    assert post(client, renamed)[0] == 404
    other.ledger.close()
    # malformed: 400; an old size above the checkpoint's: 400
    for bad in (b"", b"old\n\n" + note.encode(), b"old 01\n\n" + note.encode(), b"\xff\n\n"):
        assert post(client, bad)[0] == 400, bad
    assert post(client, b"old 99\n\n" + note.encode())[0] == 400
    # a proof from size 0 must be empty: 422
    assert (
        post(client, b"old 0\n" + base64.b64encode(b"\0" * 32) + b"\n\n" + note.encode())[0] == 422
    )
    # a body past the limit: 413, unread
    assert post(client, b"old 0\n" + b"A" * 70_000)[0] == 413
    # nothing above changed the witness: a first submission is still from size 0
    assert post(client, body)[0] == 200


def test_a_cosignature_is_bound_to_its_checkpoint_and_key() -> None:
    key = Ed25519PrivateKey.generate()
    witness = WitnessVerifier("w.example.test", key.public_key())
    assert WitnessVerifier.parse(witness.encode()) == witness
    text = f"{ORIGIN}\n7\n{base64.b64encode(b'r' * 32).decode()}\n"
    line = cosign(text, witness, key.sign, NOW)
    note = text + "\n" + line
    assert cosigned_by(note, [witness]) == [witness]
    other = WitnessVerifier("w.example.test", Ed25519PrivateKey.generate().public_key())
    assert cosigned_by(note, [other]) == []  # an unknown key's line is ignored
    with pytest.raises(NoteInvalid):  # another checkpoint under the same line
        cosigned_by(text.replace("\n7\n", "\n8\n") + "\n" + line, [witness])
    blob = bytearray(base64.b64decode(line.split(" ")[-1]))
    blob[11] ^= 1  # the timestamp is signed too
    tampered = line.rsplit(" ", 1)[0] + " " + base64.b64encode(bytes(blob)).decode() + "\n"
    with pytest.raises(NoteInvalid):
        cosigned_by(text + "\n" + tampered, [witness])
    with pytest.raises(NoteInvalid):  # a log's note key is not a witness key
        WitnessVerifier.parse(NoteVerifier("w.example.test", key.public_key()).encode())
