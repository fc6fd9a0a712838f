"""Signed checkpoints on SQLite and PostgreSQL: each is a C2SP signed note of the tree
as it is, proven to extend the one signed before it; a ledger whose history was
rewritten consistently (entries, chain and tree) can no longer be signed."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger import Conflict, Ledger
from ledger.certificates.tlog import (
    Checkpoint,
    NoteVerifier,
    open_note,
    parse_checkpoint,
    verify_consistency,
)
from tests.unit.ledger import test_ledger as base
from tests.unit.ledger.test_ledger_chain import fill, rechain_from, run_sql

ledger_url = base.ledger_url
ledger_db = base.ledger_db
ORIGIN = "example.test/ledger"


@pytest.fixture
def log_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def sign(led: Ledger, key: Ed25519PrivateKey) -> str:
    signer = NoteVerifier(ORIGIN, key.public_key())
    return led.sign_checkpoint(origin=ORIGIN, signer=signer, sign=key.sign).note


def signed_after(led: Ledger, key: Ed25519PrivateKey, entries: int) -> Checkpoint:
    """``entries`` more entries, then a checkpoint signed, read back from its note."""
    fill(led, entries)
    verifier = NoteVerifier(ORIGIN, key.public_key())
    return parse_checkpoint(open_note(sign(led, key), [verifier])[0])


def test_each_checkpoint_names_the_tree_and_extends_the_last(
    ledger_db: Ledger, log_key: Ed25519PrivateKey
) -> None:
    first = signed_after(ledger_db, log_key, 5)
    assert (first.origin, first.size, first.root) == (ORIGIN, *ledger_db.tree_root())
    second = signed_after(ledger_db, log_key, 9)
    assert second.size == 14
    # what a holder of the first checkpoint checks of the second
    proof = ledger_db.prove_consistency(first.size, second.size)
    verify_consistency(first.size, second.size, first.root, second.root, proof)
    # nothing appended since: the same note again
    assert sign(ledger_db, log_key) == sign(ledger_db, log_key)


def test_a_rewritten_history_is_not_signed(ledger_db: Ledger, log_key: Ed25519PrivateKey) -> None:
    fill(ledger_db, 6)
    sign(ledger_db, log_key)
    # the careful attacker: an edit, then every hash, the tip and the tree recomputed
    run_sql(
        ledger_db,
        "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 2",
        b='{"i":2,"tag":"forged"}',
    )
    rechain_from(ledger_db, 2)
    fill(ledger_db, 3)
    with ledger_db.engine.connect() as conn:
        before = conn.execute(sa.text("SELECT count(*) FROM ledger_signed_checkpoints")).scalar()
    with pytest.raises(Conflict, match="does not extend"):
        sign(ledger_db, log_key)
    with ledger_db.engine.connect() as conn:
        after = conn.execute(sa.text("SELECT count(*) FROM ledger_signed_checkpoints")).scalar()
    assert before == after == 1


def test_a_checkpoint_under_another_key_or_origin_is_refused(
    ledger_db: Ledger, log_key: Ed25519PrivateKey
) -> None:
    fill(ledger_db, 3)
    sign(ledger_db, log_key)
    other = Ed25519PrivateKey.generate()
    with pytest.raises(Conflict, match="log key"):
        sign(ledger_db, other)
    signer = NoteVerifier("elsewhere.test/log", log_key.public_key())
    with pytest.raises(Conflict):
        ledger_db.sign_checkpoint(origin="elsewhere.test/log", signer=signer, sign=log_key.sign)


def test_verify_from_a_signed_checkpoint(ledger_db: Ledger, log_key: Ed25519PrivateKey) -> None:
    signed = signed_after(ledger_db, log_key, 7)
    fill(ledger_db, 5)
    report = ledger_db.verify(signed=signed)
    assert report.ok and report.verified_from == 7 and report.length == 12
    assert report.checked[0] == "signed_checkpoint"
    # an entry after the checkpoint edited: the chain's check finds it
    run_sql(ledger_db, "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 9", b="{}")
    assert ledger_db.verify(signed=signed).first_bad_index == 9


def test_verify_refuses_a_ledger_that_does_not_extend_the_signed_checkpoint(
    ledger_db: Ledger, log_key: Ed25519PrivateKey
) -> None:
    signed = signed_after(ledger_db, log_key, 7)
    fill(ledger_db, 2)
    # history before the checkpoint rewritten consistently: the chain, the tip and the
    # tree agree with each other, not with what the log signed
    run_sql(
        ledger_db,
        "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 3",
        b='{"i":3,"tag":"forged"}',
    )
    rechain_from(ledger_db, 3)
    report = ledger_db.verify(signed=signed)
    assert not report.ok and report.checked == ("signed_checkpoint",)
    assert "does not extend the signed checkpoint" in (report.reason or "")


def test_verify_refuses_a_chain_cut_below_the_signed_checkpoint(
    ledger_db: Ledger, log_key: Ed25519PrivateKey
) -> None:
    signed = signed_after(ledger_db, log_key, 6)
    run_sql(ledger_db, "DELETE FROM ledger_entries WHERE entry_index >= 4")
    run_sql(ledger_db, "UPDATE ledger_tip SET length = 4 WHERE id = 1")
    report = ledger_db.verify(signed=signed)
    assert not report.ok and "tail removed" in (report.reason or "")
