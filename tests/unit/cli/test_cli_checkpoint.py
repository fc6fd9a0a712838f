"""``replay-enclave ledger checkpoint``: stdout is the signed note alone, which verifies
with the log verifier key the command names; a later one extends it; bad input is one
line and a non-zero exit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from enclave import Home, Runtime
from ledger.certificates.tlog import NoteVerifier, open_note, parse_checkpoint
from tests.unit.cli.test_cli_capture import assert_one_line_error, run
from tests.unit.cli.test_cli_capture import template_home as template_home

pytestmark = pytest.mark.skipif(shutil.which("replay-enclave") is None, reason="needs the CLI")


@pytest.fixture
def home(template_home: Path, tmp_path: Path) -> Path:
    root = tmp_path / "home"
    shutil.copytree(template_home, root)
    return root


def checkpoint(home: Path, *extra: str) -> tuple[str, str]:
    out = run("ledger", "checkpoint", "--home", str(home), *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout, out.stderr


def test_the_note_verifies_with_the_named_key_and_the_next_extends_it(
    home: Path, tmp_path: Path
) -> None:
    note, said = checkpoint(home, "--out", str(tmp_path / "c1.note"))
    assert (tmp_path / "c1.note").read_text() == note
    verifier = NoteVerifier.parse(said.split("log verifier key: ")[1].strip())
    first = parse_checkpoint(open_note(note, [verifier])[0])
    assert first.size >= 1 and first.origin == verifier.name
    assert "the first checkpoint of this log" in said
    head = json.loads(run("ledger", "head", "--home", str(home), "--json").stdout)
    assert first.size == head["index"] + 1
    # the same tree: the same note; as JSON, its fields
    data = json.loads(checkpoint(home, "--json")[0])
    assert data["note"] == note and data["tree_size"] == first.size
    assert data["verifier_key"] == verifier.encode() and data["extends"] == first.size


def test_bad_input_is_one_line(home: Path, tmp_path: Path) -> None:
    line = assert_one_line_error(
        run("ledger", "checkpoint", "--home", str(home), "--out", str(tmp_path / "no" / "x"))
    )
    assert line == "error: the checkpoint file cannot be written"
    config = home / "config.toml"
    config.write_text(config.read_text() + '\n[ledger]\norigin = "two words"\n')
    line = assert_one_line_error(run("ledger", "checkpoint", "--home", str(home)))
    assert line == "error: [ledger] origin must be one word with no '+'"
    line = assert_one_line_error(run("ledger", "checkpoint", "--home", str(tmp_path / "none")))
    assert "not a replay-enclave home" in line


def append(home: Path, count: int) -> None:
    runtime = Runtime.open(Home(home))
    try:
        runtime.ledger.append_many([("note", "cli", {"i": i}) for i in range(count)])
    finally:
        runtime.close()


def test_verify_from_the_signed_checkpoint(home: Path, tmp_path: Path) -> None:
    note_file = tmp_path / "c1.note"
    note, _ = checkpoint(home, "--out", str(note_file))
    size = int(note.split("\n")[1])
    append(home, 4)
    out = run("ledger", "verify", "--home", str(home), "--checkpoint", str(note_file), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] and report["verified_from"] == report["signed_checkpoint"] == size
    assert report["length"] == size + 4
    out = run("ledger", "verify", "--home", str(home), "--checkpoint", str(note_file))
    assert f"proven by the signed checkpoint of {size} entries" in out.stdout
    # another key's note, an altered one, a missing file, with --full: one line each
    forged = note.replace(f"\n{size}\n", f"\n{size + 1}\n")
    (tmp_path / "forged.note").write_text(forged)
    for path, message in (
        (tmp_path / "forged.note", "error: the checkpoint is not a note this log signed"),
        (tmp_path / "missing.note", "error: the checkpoint file cannot be read"),
    ):
        line = assert_one_line_error(
            run("ledger", "verify", "--home", str(home), "--checkpoint", str(path))
        )
        assert line == message
    line = assert_one_line_error(
        run("ledger", "verify", "--home", str(home), "--full", "--checkpoint", str(note_file))
    )
    assert line == "error: --full checks every entry: it takes no --checkpoint"
