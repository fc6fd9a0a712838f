"""Agents for the replay tests: captured with harmless live functions, each one odd or
hostile only when it is replayed (``ctx`` is not a ``Recorder``).

Every live function is guarded: it raises unless a capture is in progress
(``with capturing():``), so a replay that ever called ``live`` would fail its run.
Inputs carry the parameters a hostile branch needs (a listener port, a target path)
and a canary, so nothing here is tied to one machine and a leak is detectable.

Register them by reference, e.g. ``tests.agents.replay_agents:SOCKET_AGENT``.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from enclave.capture import AgentSpec, Answer, BoundarySpec, Context, policy
from ledger import StepKind

CANARY = "CANARY-RPLY-3d7e55"
THRESHOLD = 0.5

_capturing = False
LIVE_CALLS: list[str] = []


@contextmanager
def capturing() -> Iterator[None]:
    """Allow live calls (capture time only)."""
    global _capturing
    previous, _capturing = _capturing, True
    try:
        yield
    finally:
        _capturing = previous


def _guarded(name: str, answer: Callable[[Mapping[str, Any]], Answer]) -> Callable[..., Answer]:
    def live(request: Mapping[str, Any]) -> Answer:
        LIVE_CALLS.append(name)
        if not _capturing:
            raise RuntimeError(f"live {name} called outside capture {CANARY}-live")
        return answer(request)

    return live


def replaying(ctx: Context) -> bool:
    """True unless ``ctx`` is the capture ``Recorder``. The recorder's module is looked up,
    not imported: importing it pulls in the key providers, which a worker need not load."""
    recorder = sys.modules.get("enclave.capture._recorder")
    return recorder is None or not isinstance(ctx, recorder.Recorder)


LOOKUP = BoundarySpec(
    kind=StepKind.TOOL,
    name="lookup",
    request={"key": policy("internal")},
    response={
        "value": policy("confidential"),
        "note": policy("restricted"),
        "memo": policy("restricted", "withheld"),
    },
    schema_id="lookup",
    schema_version="1",
    json_schema={
        "type": "object",
        "properties": {
            "value": {"type": "number", "minimum": 0, "maximum": 1, "x-neutral": 0.0},
            "note": {"type": "string"},
        },
    },
)
DETAIL = BoundarySpec(  # no substitute: after departure it is served from the record or not at all
    kind=StepKind.TOOL,
    name="detail",
    request={"value": policy("confidential")},
    response={"weight": policy("internal")},
)
LOCK = BoundarySpec(
    kind=StepKind.TOOL,
    name="lease",
    request={"resource": policy("internal")},
    response={"lease_id": policy("internal", live_state=True), "ttl": policy("internal")},
)

_lookup = _guarded(
    "lookup",
    lambda req: Answer(
        {"value": 0.8, "note": f"analyst note {CANARY}-note", "memo": f"memo {CANARY}-memo"},
        resolved="lookup-svc@1",
    ),
)
_detail = _guarded("detail", lambda req: Answer({"weight": 0.1}, resolved="detail-svc@1"))
_lease = _guarded("lease", lambda req: Answer({"lease_id": "LS-17", "ttl": 30}, resolved="lease@1"))

INPUTS = {
    "key": policy("internal"),
    "port": policy("internal"),
    "path": policy("internal"),
    "note": policy("restricted"),
}
OUTCOME = {
    "score": policy("internal"),
    "decision": policy("internal"),
    "proposal": policy("internal"),
    "evidence": policy("internal"),
}


def baseline_inputs(*, port: int = 0, path: str = "") -> dict[str, Any]:
    return {"key": "K-1", "port": port, "path": path, "note": f"case file {CANARY}-input"}


def _outcome(score: float) -> dict[str, Any]:
    score = min(1.0, max(0.0, score))
    decision = "HIGH" if score >= THRESHOLD else "LOW"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision},
        "evidence": ["lookup"],
    }


def _spec(
    name: str,
    function: Callable[[Context, Mapping[str, Any]], dict[str, Any]],
    boundaries: tuple[BoundarySpec, ...] = (LOOKUP,),
) -> AgentSpec:
    return AgentSpec(
        name=f"tests.agents.replay_agents:{name}",
        version="1.0.0",
        function=function,
        inputs=INPUTS,
        outcome=OUTCOME,
        boundaries=boundaries,
    )


def _plain(
    ctx: Context, inputs: Mapping[str, Any], act: Callable[[Mapping[str, Any]], None] | None
) -> dict[str, Any]:
    found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    if act is not None and replaying(ctx):
        act(inputs)
    return _outcome(float(found["value"]) + ctx.random().uniform(-0.01, 0.01))


def _hostile(name: str, act: Callable[[Mapping[str, Any]], None]) -> AgentSpec:
    return _spec(name, lambda ctx, inputs: _plain(ctx, inputs, act))


# -- well-behaved --------------------------------------------------------------------

PLAIN_AGENT = _spec("PLAIN_AGENT", lambda ctx, inputs: _plain(ctx, inputs, None))


# -- hostile when replayed -------------------------------------------------------------


def _connect(inputs: Mapping[str, Any]) -> None:
    socket.create_connection(("127.0.0.1", int(inputs["port"])), timeout=2).close()


def _connect_swallowed(inputs: Mapping[str, Any]) -> None:
    try:
        socket.create_connection(("127.0.0.1", int(inputs["port"])), timeout=2).close()
    except Exception:  # noqa: BLE001, S110 - the point: the agent swallows the refusal
        pass


def _urllib(inputs: Mapping[str, Any]) -> None:
    import urllib.request

    # no proxy table: urlopen would first list the environment, which the replay refuses
    # as an unrecorded ambient read before the connection this agent means to attempt
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    opener.open(f"http://127.0.0.1:{inputs['port']}/{CANARY}", timeout=2)  # noqa: S310


def _http_client(inputs: Mapping[str, Any]) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", int(inputs["port"]), timeout=2)
    conn.request("POST", "/", body=inputs["note"])
    conn.getresponse()


def _subprocess(inputs: Mapping[str, Any]) -> None:
    import subprocess

    subprocess.run(["touch", str(inputs["path"])], check=False)


def _os_system(inputs: Mapping[str, Any]) -> None:
    os.system(f"touch {inputs['path']}")  # noqa: S605


def _write_outside(inputs: Mapping[str, Any]) -> None:
    with open(str(inputs["path"]), "w", encoding="utf-8") as fh:
        fh.write(str(inputs["note"]))


def _ctypes_connect(inputs: Mapping[str, Any]) -> None:
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    addr = struct.pack("=H", socket.AF_INET) + struct.pack(
        "!H4s8x", int(inputs["port"]), socket.inet_aton("127.0.0.1")
    )
    libc.connect(fd, addr, len(addr))


def _thread_connect(inputs: Mapping[str, Any]) -> None:
    thread = threading.Thread(target=_connect_swallowed, args=(inputs,))
    thread.start()
    thread.join()


def _memory_bomb(inputs: Mapping[str, Any]) -> None:
    blob = bytearray(8 << 30)
    blob[0] = 1


def _sleep_forever(inputs: Mapping[str, Any]) -> None:
    while True:
        time.sleep(3600)


def _raise_with_canary(inputs: Mapping[str, Any]) -> None:
    raise ValueError(f"agent failed on {inputs['note']}")


SOCKET_AGENT = _hostile("SOCKET_AGENT", _connect)
SWALLOWED_SOCKET_AGENT = _hostile("SWALLOWED_SOCKET_AGENT", _connect_swallowed)
URLLIB_AGENT = _hostile("URLLIB_AGENT", _urllib)
HTTP_CLIENT_AGENT = _hostile("HTTP_CLIENT_AGENT", _http_client)
SUBPROCESS_AGENT = _hostile("SUBPROCESS_AGENT", _subprocess)
OS_SYSTEM_AGENT = _hostile("OS_SYSTEM_AGENT", _os_system)
WRITE_OUTSIDE_AGENT = _hostile("WRITE_OUTSIDE_AGENT", _write_outside)
CTYPES_AGENT = _hostile("CTYPES_AGENT", _ctypes_connect)
THREAD_AGENT = _hostile("THREAD_AGENT", _thread_connect)
MEMORY_AGENT = _hostile("MEMORY_AGENT", _memory_bomb)
SLEEP_AGENT = _hostile("SLEEP_AGENT", _sleep_forever)
RAISING_AGENT = _hostile("RAISING_AGENT", _raise_with_canary)


# -- odd for the engine -------------------------------------------------------------------


_divergent_runs = itertools.count()


def _divergent(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # the request depends on the process that ran it and on how many runs it saw: state
    # the record does not hold (an environment variable would be: an ambient input)
    key = f"{inputs['key']}@{os.getpid()}:{next(_divergent_runs)}"
    found = ctx.call(LOOKUP, {"key": key}, live=_lookup)
    return _outcome(float(found["value"]) + ctx.random().uniform(-0.01, 0.01))


def _needs_detail(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    detail = ctx.call(DETAIL, {"value": found["value"]}, live=_detail)
    return _outcome(
        float(found["value"]) + float(detail["weight"]) + ctx.random().uniform(-0.01, 0.01)
    )


def _reads_withheld(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    bonus = 0.01 if "urgent" in str(found["memo"]) else 0.0
    return _outcome(float(found["value"]) + bonus + ctx.random().uniform(-0.01, 0.01))


def _copies_withheld(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = dict(ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup))
    bonus = 0.01 if "urgent" in str(found["memo"]) else 0.0
    return _outcome(float(found["value"]) + bonus + ctx.random().uniform(-0.01, 0.01))


def _unseeded(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    # randomness the run cannot serve (the global ``random`` module is served; the OS's
    # entropy is deliberately not): the baseline cannot reproduce
    noise = int.from_bytes(os.urandom(4), "big") / 2**32
    return _outcome(float(found["value"]) + noise * 0.01)


def _lease_reader(copy: str) -> Callable[[Context, Mapping[str, Any]], dict[str, Any]]:
    def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
        lease = ctx.call(LOCK, {"resource": inputs["key"]}, live=_lease)
        if copy == "dict":
            lease_id = dict(lease)["lease_id"]
        elif copy == "items":
            lease_id = next(v for k, v in lease.items() if k == "lease_id")
        elif copy == "values":
            lease_id = sorted(map(str, lease.values()))[0]
        else:
            lease_id = lease["lease_id"]
        bonus = 0.05 if str(lease_id).endswith("7") else 0.0
        return _outcome(float(found["value"]) + bonus + ctx.random().uniform(-0.01, 0.01))

    return run


DIVERGENT_AGENT = _spec("DIVERGENT_AGENT", _divergent)
UNSERVABLE_AGENT = _spec("UNSERVABLE_AGENT", _needs_detail, (LOOKUP, DETAIL))
WITHHELD_AGENT = _spec("WITHHELD_AGENT", _reads_withheld)
WITHHELD_COPY_AGENT = _spec("WITHHELD_COPY_AGENT", _copies_withheld)
UNSEEDED_AGENT = _spec("UNSEEDED_AGENT", _unseeded)
LEASE_AGENT = _spec("LEASE_AGENT", _lease_reader("direct"), (LOOKUP, LOCK))
LEASE_DICT_AGENT = _spec("LEASE_DICT_AGENT", _lease_reader("dict"), (LOOKUP, LOCK))
LEASE_ITEMS_AGENT = _spec("LEASE_ITEMS_AGENT", _lease_reader("items"), (LOOKUP, LOCK))
LEASE_VALUES_AGENT = _spec("LEASE_VALUES_AGENT", _lease_reader("values"), (LOOKUP, LOCK))


def _crashes(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    raise RuntimeError("the agent crashed mid-run")


CRASHING_AGENT = _spec("CRASHING_AGENT", _crashes)


def capture_specimen(
    runtime: Any,
    agent: AgentSpec,
    inputs: Mapping[str, Any] | None = None,
    *,
    seed: int = 5,
    tenant: str = "acme",
    specimen_id: str | None = None,
) -> str:
    """Capture ``agent`` live (its live functions allowed) and return the specimen id."""
    from enclave.capture import capture

    with capturing():
        result = capture(
            runtime,
            agent,
            dict(inputs or baseline_inputs()),
            tenant_id=tenant,
            seed=seed,
            specimen_id=specimen_id,
        )
    return result.specimen_id


def _connect_when_intervened(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # behaves through the baseline gate; misbehaves only on the intervened branch
    found = ctx.call(LOOKUP, {"key": inputs["key"]}, live=_lookup)
    if replaying(ctx) and float(found["value"]) != 0.8:
        _connect_swallowed(inputs)
    return _outcome(float(found["value"]) + ctx.random().uniform(-0.01, 0.01))


SOCKET_WHEN_INTERVENED_AGENT = _spec("SOCKET_WHEN_INTERVENED_AGENT", _connect_when_intervened)
