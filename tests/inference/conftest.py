"""A real local inference server for the hosted-model tests: llama.cpp's OpenAI-compatible
server (``llama-server``) serving SmolLM2-135M-Instruct, both built and fetched by
``scripts/inference-server.sh`` into ``.inference/`` (or ``$REPLAY_ENCLAVE_INFERENCE_HOME``).

The server listens where the examples' hosted forms point (``examples/local_model.py``):
the base URL is part of a hosted model's identity, so capture and every replay worker
build the model alike. One slot and greedy decoding: the same request gets the same
answer. Without the built server the tests are skipped, unless
``REPLAY_ENCLAVE_REQUIRE_INFERENCE=1`` (the full test run sets it): then they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from enclave import Home, Runtime
from examples.local_model import MODEL, PORT
from tests.support.canary import find_canaries, scan_tree

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("REPLAY_ENCLAVE_INFERENCE_HOME", ROOT / ".inference"))
START_SECONDS = 120.0


@dataclass(frozen=True)
class ModelServer:
    """A running server: its OpenAI-compatible base URL and the model it serves."""

    url: str
    model: str
    process: subprocess.Popen[bytes]

    def prompt_tokens(self) -> int:
        """Prompt tokens the server has processed so far (its own metrics): unchanged
        across a replay, the replay asked it nothing."""
        metrics = httpx.get(self.url.removesuffix("/v1") + "/metrics", timeout=5).text
        (line,) = (m for m in metrics.splitlines() if m.startswith("llamacpp:prompt_tokens_total"))
        return int(float(line.split()[-1]))


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _binaries() -> tuple[Path, Path]:
    binary, model = HOME / "bin" / "llama-server", HOME / "model.gguf"
    if not (binary.is_file() and model.is_file()):
        message = f"no inference server in {HOME}: run scripts/inference-server.sh"
        if os.environ.get("REPLAY_ENCLAVE_REQUIRE_INFERENCE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return binary, model


@contextmanager
def serving(alias: str, port: int, log: Path, temperature: float = 0.0) -> Iterator[ModelServer]:
    """The real server on loopback ``port``, answering as ``alias``, until the block ends;
    ``temperature`` where a request names none (greedy by default)."""
    binary, model = _binaries()
    base = f"http://127.0.0.1:{port}"
    if _healthy(base):
        pytest.fail(f"port {port} already serves something: stop it first")
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(binary),
                *("--model", str(model), "--alias", alias),
                *("--host", "127.0.0.1", "--port", str(port)),
                *("--ctx-size", "4096", "--parallel", "1", "--threads", "2"),
                # at most 96 tokens where a request sets no limit: the agents under
                # test ask for a verdict, and a model left to run on writes until its
                # context is full
                *("--n-predict", "96"),
                # greedy where a request names no temperature: the same request gets the
                # same answer, at capture and when an audit asks again
                *("--temp", str(temperature)),
                "--jinja",  # the chat template the model file carries
                "--metrics",
                "--no-webui",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _healthy(base):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the inference server did not start; its log: {log}")
            time.sleep(0.2)
        yield ModelServer(url=base + "/v1", model=alias, process=process)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    with serving(MODEL, PORT, tmp_path_factory.mktemp("inference") / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """An enclave home of the test module's own."""
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("inference") / "home"))
    yield rt
    rt.close()


def audit_time() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def assert_sealed(
    runtime: Runtime, envelope: Any, capsys: pytest.CaptureFixture[str], canary: str
) -> None:
    """``canary`` in no certificate envelope, printed output or file of the home."""
    assert find_canaries(json.dumps(envelope).encode(), [canary]) == []
    printed = capsys.readouterr()
    assert find_canaries((printed.out + printed.err).encode(), [canary]) == []
    assert scan_tree(runtime.home.root, [canary]) == {}
