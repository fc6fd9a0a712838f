"""The README and the docs are executable: every shell block marked runnable in README.md
or docs/ is run as written, in a fresh folder laid out like a checkout, and must exit 0
and print what the marker expects.

A block is marked by an HTML comment on the line before it::

    <!-- runnable: NAME; expect: TEXT | TEXT; until: TEXT -->

``expect``: texts its output must contain. ``until``: the block runs a server that
stays up; it counts as run once that text is printed, then its process group is ended.
Background jobs a block starts (``... &``) are ended with it. ``pip install`` lines are
not run (they would replace the environment under test): the test checks instead that
the environment satisfies them — the project and the named extras are installed.

A block's NAME is its test id (``pytest tests/project/test_readme.py -k NAME``), unique across
the files.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
MARKER = re.compile(r"<!-- runnable: (?P<spec>.*?) -->\n```bash\n(?P<body>.*?)```", re.DOTALL)
TIMEOUT = 240.0
CHECKOUT_PARTS = ("policies", "scripts", "examples", "pyproject.toml")

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Block:
    name: str
    source: str  # the file it is in, relative to the checkout
    body: str
    expect: tuple[str, ...]
    until: str | None


def _blocks() -> list[Block]:
    found = []
    for path in SOURCES:
        for match in MARKER.finditer(path.read_text(encoding="utf-8")):
            name, *options = [part.strip() for part in match["spec"].split(";")]
            fields = dict(option.split(":", 1) for option in options)
            expect = tuple(t.strip() for t in fields.get("expect", "").split("|") if t.strip())
            until = fields["until"].strip() if "until" in fields else None
            source = path.relative_to(ROOT).as_posix()
            found.append(Block(name, source, match["body"], expect, until))
    return found


def _installed(line: str) -> None:
    """A ``pip install .`` or ``pip install '.[extra,...]'`` line is satisfied here."""
    command = line.split("&&", 1)[0]
    targets = re.findall(r"'?\.(?:\[([a-z,-]+)\])?'?(?:\s|$)", command.split("pip install", 1)[1])
    assert targets, f"unrecognised install line: {command}"
    extras = {e for t in targets for e in t.split(",") if e}
    for raw in distribution("replay-enclave").requires or []:
        requirement = Requirement(raw)
        marker = requirement.marker
        if marker is not None and not any(marker.evaluate({"extra": e}) for e in extras):
            continue
        try:
            distribution(requirement.name)
        except PackageNotFoundError:
            pytest.fail(f"a runnable block installs {requirement.name}; it is not installed here")


def _script(body: str) -> str:
    lines = []
    for line in body.splitlines():
        if line.startswith("pip install"):
            _installed(line)
            line = line.split("&&", 1)[1].strip() if "&&" in line else ":"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _checkout(tmp: Path) -> Path:
    for part in CHECKOUT_PARTS:
        (tmp / part).symlink_to(ROOT / part)
    return tmp


def _run(block: Block, cwd: Path) -> tuple[int | None, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ENCLAVE_", "VAULT_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", _script(block.body)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    output = b""
    deadline = time.monotonic() + TIMEOUT
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            ended_at: float | None = None
            while time.monotonic() < deadline:
                # once the script has ended, read what is left for a moment, then stop:
                # its background jobs (servers, workers) may hold the pipe open
                if ended_at is None and proc.poll() is not None:
                    ended_at = time.monotonic()
                if ended_at is not None and time.monotonic() - ended_at > 2.0:
                    break
                if not sel.select(timeout=1.0 if ended_at is None else 0.2):
                    if ended_at is not None:
                        break
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                output += chunk
                if block.until and block.until.encode() in output:
                    return None, output.decode(errors="replace")
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            return proc.returncode, output.decode(errors="replace")
        finally:
            # the block's background jobs (servers, workers) share its process group
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            proc.stdout.close()


BLOCKS = _blocks()


def test_readme_marks_its_flows() -> None:
    where = {b.name: b.source for b in BLOCKS}
    assert len(where) == len(BLOCKS), "two runnable blocks share a name"
    # the front door's flows are in the README, the rest in the docs
    assert {n for n, s in where.items() if s == "README.md"} >= {"quickstart", "tour", "analyst"}
    assert {"vault", "service", "own-agent", "erase-rotate"} <= set(where)


def test_every_marked_block_is_found() -> None:
    """A marker the pattern misses (a typo, no bash fence after it) would be a block that
    silently never runs."""
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        marked = sum(line.startswith("<!-- runnable:") for line in text.splitlines())
        found = len(MARKER.findall(text))
        assert marked == found, f"{path.name}: {marked} markers, {found} runnable blocks"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    code, output = _run(block, _checkout(tmp_path))
    tail = f"({block.source})\n" + output[-3000:]
    if block.until:
        assert code is None, f"{block.name} ended (exit {code}) before {block.until!r}:\n{tail}"
    else:
        assert code == 0, f"{block.name} exited {code}:\n{tail}"
    for text in block.expect:
        assert text in output, f"{block.name} did not print {text!r}:\n{tail}"
    assert "Traceback" not in output, tail
