"""``replay-enclave witness`` as its own process, asked by ``ledger checkpoint`` of a demo
home that names it in ``[[ledger.witnesses]]``: the checkpoint comes back cosigned, the
bundles exported after it carry the cosignature, and ``verify --witness`` requires it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.certificates.tlog import WitnessVerifier, cosigned_by
from tests.support import cli_runner
from tests.support.served import free_port, listening
from tests.unit.cli.test_cli_capture import assert_one_line_error
from tests.unit.cli.test_cli_checkpoint import append

cli = cli_runner.run_cli
_MAIN = "from enclave.cli import main; main()"


def _witness_args(folder: Path, log_key: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        _MAIN,
        "witness",
        "--name",
        "witness.example.test/w1",
        "--log",
        log_key,
        "--state",
        str(folder / "witness.db"),
        "--key",
        str(folder / "witness.pem"),
    ]


@pytest.fixture(scope="module")
def witnessed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """A demo home whose config names a running witness: (home, witness key, log key)."""
    root = tmp_path_factory.mktemp("witness")
    home = root / "home"
    assert cli(home, "demo", "--json").returncode == 0
    log_key = cli(home, "ledger", "checkpoint", "--public-key").stdout.strip()
    args = _witness_args(root, log_key)
    done = subprocess.run([*args, "--public-key"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    witness_key = done.stdout.strip()
    port = free_port()
    with listening([*args[2:], "--port", str(port)], port):
        config = home / "config.toml"
        config.write_text(
            config.read_text()
            + f'\n[[ledger.witnesses]]\nurl = "http://127.0.0.1:{port}"\nkey = "{witness_key}"\n'
        )
        yield home, witness_key, log_key


def test_checkpoints_come_back_cosigned_and_bundles_carry_it(
    witnessed: tuple[Path, str, str], tmp_path: Path
) -> None:
    home, witness_key, log_key = witnessed
    witness = WitnessVerifier.parse(witness_key)
    for _ in range(2):  # the second from the size the witness says it cosigned
        done = cli(home, "ledger", "checkpoint", "--json")
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)
        assert said["witnesses"] == {witness.name: "cosigned"}
        assert cosigned_by(said["note"], [witness]) == [witness]
        # more entries: the next checkpoint must be proven from the witnessed one
        append(home, 3)
    folder = tmp_path / "bundles"
    assert cli(home, "certificates", "export", str(folder)).returncode == 0
    bundle = sorted(folder.glob("*.bundle.json"))[0]
    issuer = str(home / "keys" / "signing-key.pem.pub")
    base = ["verify", str(bundle), "--public-key", issuer, "--log-key", log_key, "--json"]

    def first_failure(*extra: str) -> str | None:
        out = cli(home, *base, *extra)
        assert out.stdout, out.stderr
        report = json.loads(out.stdout)
        return next((c["name"] for c in report["checks"] if not c["ok"]), None)

    assert first_failure("--witness", witness_key) is None
    other = _other_witness_key(tmp_path, log_key)
    assert first_failure("--witness", other) == "checkpoint"
    assert first_failure("--witness", witness_key, "--witness", other, "--quorum", "1") is None
    assert first_failure("--witness", witness_key, "--witness", other) == "checkpoint"


def _other_witness_key(folder: Path, log_key: str) -> str:
    args = _witness_args(folder, log_key)
    args[args.index("--key") + 1] = str(folder / "other-witness.pem")
    done = subprocess.run([*args, "--public-key"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_bad_input_is_one_line(witnessed: tuple[Path, str, str], tmp_path: Path) -> None:
    home, witness_key, log_key = witnessed
    args = _witness_args(tmp_path, log_key)
    named = [*args]
    named[named.index("--name") + 1] = "two words"
    for argv, said in (
        (named, "error: a witness name is one word with no '+'"),
        (
            [*args[:-6], "--log", "garbage", *args[-4:]],
            "error: a --log is not a C2SP Ed25519 verifier key",
        ),
        ([*args[:-2], "--key", str(tmp_path)], "error: the witness's key file cannot be written"),
    ):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert assert_one_line_error(done) == said
    assert not (tmp_path / "witness.db").exists() and not (tmp_path / "witness.pem").exists()
    bundle = next((home / "certificates").glob("*.bundle.json"))
    line = assert_one_line_error(
        cli(home, "verify", str(bundle), "--witness", witness_key, "--quorum", "2")
    )
    assert line == "error: --quorum is 1 to the number of --witness keys"
    line = assert_one_line_error(cli(home, "verify", str(bundle), "--witness", "nope"))
    assert line == "error: a witness key is not a C2SP Ed25519 cosigner key"
