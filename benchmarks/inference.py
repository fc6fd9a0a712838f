"""What governed inference adds to a live answer, against a direct client call to the same
local model server, measured in one run.

The script starts (and stops) its own llama.cpp server with SmolLM2-135M-Instruct, built
by ``scripts/inference-server.sh`` into ``.inference/`` (or
``$REPLAY_ENCLAVE_INFERENCE_HOME``), on a free loopback port; without the built server it
says so and measures nothing. One real exchange with the server is first recorded as the
wire adapter records it (``request_key``, ``answer_record``): the recorded call of the
governed boundary that the broker checks every ask against. Then, over ``--repetitions``
of the same ``--prompts`` distinct prompts (distinct, and a fresh audit record per
repetition and path, so no answer is ever served from the record), each prompt through
every path back to back, in an order that rotates from prompt to prompt (so the paths
share the machine's load), medians over the repetitions of each path's mean per answer:

- *(1) direct client call*: an ``httpx`` POST of the chat completion on one kept-alive
  client — the reference;
- *(2) supervisor's broker*: ``InferenceBroker.answer(tag, ask)`` with the ask a run
  sends (``{"boundary", "request"}``, the request in the wire adapter's key form): the
  checks against the grant and the record, the endpoint's answer on the stage's client,
  the pinned identity checked, the answer sealed (AES-GCM, fsync) into the record;
- *(3) sandboxed run asking*: one worker call per answer on a real sandboxed worker
  (bubblewrap where the system has it): the template forks a fresh run, the run builds
  the request and sends an ``ask`` frame, the template relays it with the run's tag, the
  handle's ``on_ask`` calls the broker as in (2), the answer goes back down to the run,
  the run replies and is reaped — the whole round trip of one governed answer in a
  replayed run;
- *run that asks nothing*: the same worker call whose run does not ask — the fork floor
  included in (3);
- *server's own time*: prompt processing plus generation as the server's ``/metrics``
  count them, per answer; the same in every path, the floor under all three.

Each path's row gives the model's generation speed (completion tokens per second of
generation time, from ``/metrics``) and the completion tokens per answer (greedy: the
same in every path), and *beyond*: the answer's time less the server's own time for it,
what the path adds. The target: (3) within 1.2x (1). On a shared machine the server's
time varies from answer to answer far more than any path adds, so the script also gives
each ratio at the direct call's server time: ``(wall(1) + beyond(k) - beyond(1)) /
wall(1)``.

    python benchmarks/inference.py
    python benchmarks/inference.py --prompts 6 --repetitions 5 --max-tokens 16
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from enclave.adapters.http import answer_record, request_key  # noqa: E402
from enclave.replay.inference import (  # noqa: E402
    Endpoint,
    InferenceBroker,
    InferenceCaps,
    InferenceGrant,
    InferenceRecord,
)
from enclave.replay.runs import RecordedStep, Trajectory  # noqa: E402
from enclave.sandbox import Sandbox, SandboxLimits, WorkerHandle  # noqa: E402
from enclave.store import PayloadStore  # noqa: E402
from ledger import canonical_json  # noqa: E402

HOME = Path(os.environ.get("REPLAY_ENCLAVE_INFERENCE_HOME", ROOT / ".inference"))
MODEL = "smollm2-135m"
BOUNDARY = "model"
TARGET = 1.2
DIRECT, BROKER, SANDBOXED, FLOOR = (
    "(1) direct client call",
    "(2) supervisor's broker",
    "(3) sandboxed run asking",
    "run that asks nothing",
)
SERVER = "server's own time"
ROWS = (DIRECT, BROKER, SANDBOXED, FLOOR, SERVER)
SUBJECTS = (
    "a lighthouse",
    "a glacier",
    "a violin",
    "a comet",
    "a beehive",
    "a canal lock",
    "a sundial",
    "a coral reef",
    "a windmill",
    "a library",
    "a volcano",
    "a compass",
)
START_SECONDS = 120.0
CAPS = InferenceCaps(calls=10**6, input_tokens=10**9, output_tokens=10**9, wall_seconds=10**6)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port if port != 8931 else _free_port()


@contextmanager
def _model_server(log: Path) -> Iterator[str]:
    """A llama.cpp server on a free loopback port: its origin; stopped on the way out."""
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(HOME / "bin" / "llama-server"),
                *("--model", str(HOME / "model.gguf"), "--alias", MODEL),
                *("--host", "127.0.0.1", "--port", str(port)),
                *("--ctx-size", "4096", "--parallel", "1", "--threads", "2"),
                *("--n-predict", "96", "--temp", "0", "--jinja", "--metrics", "--no-webui"),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _healthy(origin):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the inference server did not start; its log: {log}")
            time.sleep(0.2)
        yield origin
    finally:
        process.terminate()
        process.wait(timeout=30)


def _healthy(origin: str) -> bool:
    try:
        return httpx.get(origin + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _metrics(origin: str) -> dict[str, float]:
    text = httpx.get(origin + "/metrics", timeout=5).text
    found = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, value = line.split()
            found[name.removeprefix("llamacpp:")] = float(value)
    return found


def _payload(prompt: str, max_tokens: int) -> dict[str, Any]:
    # cache_prompt off: every path pays the whole prompt, whichever asked the slot before
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": f"In one sentence, what is {prompt}?"}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "cache_prompt": False,
    }


def _recorded(client: httpx.Client, url: str, max_tokens: int) -> Trajectory:
    """One real exchange, recorded as the wire adapter records it."""
    request = client.build_request("POST", url, json=_payload("a recorded question", max_tokens))
    response = client.send(request)
    step = RecordedStep(
        seq=0,
        agent="main",
        call_id=f"main/{BOUNDARY}#0",
        kind="model",
        name=BOUNDARY,
        alias=None,
        resolved=None,
        request=request_key(request),
        response=answer_record(response, response.read()),
    )
    return Trajectory(specimen_id="bench", agent="bench", seed=0, steps=(step,))


class Paths:
    """The measured paths over one server; each call answers one prompt."""

    def __init__(
        self, *, origin: str, trajectory: Trajectory, folder: Path, worker: WorkerHandle
    ) -> None:
        self.origin, self.url = origin, origin + "/v1/chat/completions"
        self._trajectory, self._folder, self._worker = trajectory, folder, worker
        self._client = httpx.Client(timeout=600)
        self._grant = InferenceGrant(boundary=BOUNDARY, endpoint="bench", model=MODEL, caps=CAPS)
        self._records = 0
        self.fresh_brokers(1)

    def fresh_brokers(self, seeds: int) -> None:
        """(2) and (3) each get a broker over a fresh record of its own."""
        self.broker, self.relayed = self._broker(seeds), self._broker(seeds)

    def _broker(self, seeds: int) -> InferenceBroker:
        """A broker over a record of its own: nothing in it answers an ask."""
        self._records += 1
        return InferenceBroker(
            grants=[self._grant],
            endpoints={"bench": Endpoint(name="bench", origin=self.origin)},
            trajectory=self._trajectory,
            record=InferenceRecord(
                PayloadStore(root=self._folder),
                tenant_id="bench",
                specimen_id=f"r{self._records}",
                key=os.urandom(32),
            ),
            seeds=frozenset(range(seeds)),
        )

    def direct(self, seed: int, payload: dict[str, Any]) -> int:
        response = self._client.post(
            self.url, content=canonical_json(payload), headers={"content-type": "application/json"}
        )
        body = response.json()
        assert response.status_code == 200 and body["model"] == MODEL
        return int(body["usage"]["completion_tokens"])

    def brokered(self, seed: int, payload: dict[str, Any]) -> int:
        ask = {
            "boundary": BOUNDARY,
            "request": request_key(httpx.Request("POST", self.url, json=payload)),
        }
        answer = self.broker.answer({"seed": seed, "arm": "intervened"}, ask)
        assert answer["status"] == 200
        return int(answer["body"]["json"]["usage"]["completion_tokens"])

    def sandboxed(self, seed: int, payload: dict[str, Any], *, ask: bool = True) -> int:
        call = {"boundary": BOUNDARY, "url": self.url, "payload": payload, "seed": seed}
        reply = self._worker.call(
            {**call, "arm": "intervened", "ask": ask}, on_ask=self.relayed.answer
        )
        assert reply["status"] == (200 if ask else 0)
        return int(reply["completion_tokens"])

    def close(self) -> None:
        self._client.close()


def _repetition(
    paths: Paths, prompts: list[dict[str, Any]], order: list[str], rotate: int
) -> dict[str, dict[str, float]]:
    """Every prompt through every path, the paths back to back in an order that rotates
    from prompt to prompt (so each sees the same load); per answer, each path's mean."""
    paths.fresh_brokers(len(prompts))  # fresh records: nothing is served from them
    run: dict[str, Callable[[int, dict[str, Any]], int]] = {
        DIRECT: paths.direct,
        BROKER: paths.brokered,
        SANDBOXED: paths.sandboxed,
        FLOOR: lambda seed, payload: paths.sandboxed(seed, payload, ask=False),
    }
    sums = {
        label: dict.fromkeys(("wall", "prompt", "generating", "tokens", "generated"), 0.0)
        for label in order
    }
    for seed, payload in enumerate(prompts):
        shift = (rotate + seed) % len(order)
        for label in order[shift:] + order[:shift]:
            before = _metrics(paths.origin)
            started = time.perf_counter()
            tokens = run[label](seed, payload)
            wall = time.perf_counter() - started
            after = _metrics(paths.origin)
            total = sums[label]
            total["wall"] += wall
            total["tokens"] += tokens
            total["prompt"] += after["prompt_seconds_total"] - before["prompt_seconds_total"]
            for key, name in (
                ("generating", "tokens_predicted_seconds_total"),
                ("generated", "tokens_predicted_total"),
            ):
                total[key] += after[name] - before[name]
    n = len(prompts)
    return {
        label: {
            "wall": t["wall"] / n,
            "server": (t["prompt"] + t["generating"]) / n,
            "tokens": t["tokens"] / n,
            "per_second": t["generated"] / t["generating"] if t["generating"] else 0.0,
        }
        for label, t in sums.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="governed inference's cost per live answer")
    parser.add_argument("--prompts", type=int, default=6, help="distinct prompts per repetition")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=16, help="completion tokens per answer")
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(SUBJECTS):
        parser.error(f"--prompts is between 1 and {len(SUBJECTS)}")
    if not ((HOME / "bin" / "llama-server").is_file() and (HOME / "model.gguf").is_file()):
        print(f"skipped: no inference server in {HOME}: run scripts/inference-server.sh")
        return 0
    prompts = [_payload(subject, args.max_tokens) for subject in SUBJECTS[: args.prompts]]
    with tempfile.TemporaryDirectory(prefix="inference-bench-") as tmp:
        folder = Path(tmp)
        sandbox = Sandbox(scratch_root=folder / "scratch", limits=SandboxLimits(wall_seconds=600))
        with (
            _model_server(folder / "server.log") as origin,
            sandbox.start(
                "benchmarks._ask_worker:handle", preload=("benchmarks._ask_worker",)
            ) as worker,
        ):
            with httpx.Client(timeout=600) as client:
                trajectory = _recorded(client, origin + "/v1/chat/completions", args.max_tokens)
            paths = Paths(origin=origin, trajectory=trajectory, folder=folder, worker=worker)
            try:
                order = [DIRECT, BROKER, SANDBOXED, FLOOR]
                _repetition(paths, prompts[:1], order, 0)  # warm every path once
                timings: dict[str, list[dict[str, float]]] = {label: [] for label in order}
                for rep in range(args.repetitions):
                    for label, figures in _repetition(paths, prompts, order, rep).items():
                        timings[label].append(figures)
            finally:
                paths.close()
        isolation = sandbox.environment["isolation"]
    _report(timings, args, isolation)
    return 0


def _report(
    timings: dict[str, list[dict[str, float]]], args: argparse.Namespace, isolation: str
) -> None:
    def median(label: str, key: str) -> float:
        return statistics.median(t[key] for t in timings[label])

    reference = median(DIRECT, "wall")
    print(
        f"llama.cpp server, {MODEL}, {args.prompts} distinct prompts x {args.repetitions} "
        f"repetitions, at most {args.max_tokens} completion tokens; worker isolation: "
        f"{isolation}; medians per answer"
    )
    print(
        f"{'path':<28}{'ms':>10}{'server ms':>11}{'beyond':>9}{'tokens':>8}{'tok/s':>8}"
        f"{'vs (1)':>9}"
    )

    def beyond(label: str) -> float:
        return statistics.median(t["wall"] - t["server"] for t in timings[label])

    for label in (DIRECT, BROKER, SANDBOXED, FLOOR):
        wall = median(label, "wall")
        ratio = f"{wall / reference:.3f}x" if label != FLOOR else "-"
        print(
            f"{label:<28}{wall * 1000:>10.1f}{median(label, 'server') * 1000:>11.1f}"
            f"{beyond(label) * 1000:>9.1f}{median(label, 'tokens'):>8.1f}"
            f"{median(label, 'per_second'):>8.1f}{ratio:>9}"
        )
    print(f"{SERVER:<28}{median(DIRECT, 'server') * 1000:>10.1f}")

    def level(label: str) -> float:  # at the direct call's server time
        return (reference + beyond(label) - beyond(DIRECT)) / reference

    sandboxed = median(SANDBOXED, "wall") / reference
    met = "met" if sandboxed <= TARGET else "missed"
    print(
        f"(2) / (1): {median(BROKER, 'wall') / reference:.3f}x; "
        f"(3) / (1): {sandboxed:.3f}x (target <= {TARGET}x: {met})"
    )
    print(
        f"at the direct call's server time: (2) / (1) {level(BROKER):.3f}x, "
        f"(3) / (1) {level(SANDBOXED):.3f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
