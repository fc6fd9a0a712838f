"""Capture overhead per boundary crossing, against what an agent runtime already pays.

For payloads of 256 B, 4 KiB and 64 KiB (one confidential response field holding that
many bytes of text, plus a small request field) this measures, in one run:

- ``Recorder.call`` with a trivial live function, on a writer opened from a real
  ``PayloadStore`` in a fresh enclave home: canonical JSON, keyed digests, AES-GCM,
  framing and the step record. *batched*: frames go to the file through a 1 MiB
  buffer and are fsynced once at ``close`` (the seal), that cost amortised over the
  steps; *durable*: flushed and fsynced after every step.
- (a) the cryptographic floor: SHA-256 + AES-256-GCM of the same payload bytes alone;
- *bare work*: everything a step cannot avoid (canonical bytes, four keyed digests, a
  timestamp, AES-GCM, framing, the write + fsync) inline without the SDK — how far the
  SDK's own overhead is from the floor of the design;
- (b) one OpenTelemetry SDK span with five attributes, ended, through a
  ``BatchSpanProcessor`` whose exporter drops everything; ``force_flush`` after each
  round is inside the timing, so the processor's background work counts, as the seal's
  write + fsync counts for batched capture.

The three are measured in alternating rounds so a busy machine slows all alike.

Then the ledger's append throughput (``benchmarks._ledger_append.measure``) when that
module is present. Medians over repeated rounds; ratios are capture / reference.

``--payloads database`` (or ``both``, after the table above) measures the same capture
steps with the payload store in the database (``[payloads] store = "database"``) against
the file store, in alternating rounds of one run: the ratio database / files per payload
size and mode, target <= 1.5x at every row; beside each, the same bytes per step stored
alone (appended to a file, inserted into a table: no capture work), the reference for
what the database itself costs. The database is a local PostgreSQL started
for the run (fsync on) whose WAL is first warmed, so segments are recycled as on a
server that has been running (``--cold-wal``: not warmed), or ``--ledger-url``.

    python benchmarks/capture.py                      # the table
    python benchmarks/capture.py --payloads both      # and database vs file store
    python benchmarks/capture.py --profile            # cProfile of batched 4 KiB steps
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402

from enclave._home import Home  # noqa: E402
from enclave._runtime import Runtime  # noqa: E402
from enclave.capture import AgentSpec, BoundarySpec, Recorder, policy  # noqa: E402
from ledger import StepKind  # noqa: E402

SIZES = (256, 4096, 65536)
MODES = ("batched", "durable")


def row_label(size: int, mode: str) -> str:
    """A table row's label, as printed and as ``docs/benchmarks.md`` cites it."""
    return f"{size} {mode}"


# every row label the tables print (tests/project/test_docs.py checks the ones the docs cite)
ROWS = (*(row_label(size, mode) for size in SIZES for mode in MODES), "ledger append")
TARGET_SIZE = 4096
TARGET_RATIO = 1.0  # batched capture per step <= 1.0 x one OTel span

SPEC = BoundarySpec(
    kind=StepKind.TOOL,
    name="bench-tool",
    request={"query": policy("internal")},
    response={"body": policy("confidential")},
)
REQUEST = {"query": "supplier-074 risk"}
# as ``capture`` builds it: every step is checked against the agent's declared boundaries
AGENT = AgentSpec(
    name="bench-agent",
    version="1",
    function=lambda ctx, inputs: {},
    inputs={},
    outcome={},
    boundaries=(SPEC,),
)


def payload(size: int) -> str:
    rng = random.Random(size)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(size))


# -- capture ---------------------------------------------------------------------------


class CaptureBench:
    def __init__(self, root: Path, *, env: dict[str, str] | None = None) -> None:
        self.runtime = Runtime.open(Home.init(root), env=env)
        self.digester = self.runtime.digests.for_tenant("bench")
        self._n = 0

    def close(self) -> None:
        self.runtime.close()

    def recorder(self, *, durable: bool) -> tuple[Recorder, Any]:
        self._n += 1
        specimen = f"sp-bench-{self._n}"
        key, wrapped = self.runtime.keys.new_data_key("bench", specimen)
        writer = self.runtime.payloads.open_writer(
            "bench", specimen, wrapped=wrapped, data_key=key, durable=durable
        )
        recorder = Recorder(
            tenant_id="bench",
            digester=self.digester,
            writer=writer,
            clock=self.runtime.clock,
            seed=0,
            agent=AGENT,
        )
        return recorder, writer

    def per_step(self, size: int, *, durable: bool, steps: int, rounds: int) -> tuple[float, float]:
        """Medians over rounds of (steps x Recorder.call + writer.close) / steps, seconds:
        wall clock and process CPU time."""
        response = {"body": payload(size)}

        def live(_request: Mapping[str, Any]) -> Mapping[str, Any]:
            return response

        wall, cpu = [], []
        for _ in range(rounds):
            recorder, writer = self.recorder(durable=durable)
            call = recorder.call
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps):
                call(SPEC, REQUEST, live=live)
            writer.close()
            wall.append((time.perf_counter() - start) / steps)
            cpu.append((time.process_time() - start_cpu) / steps)
            writer.discard()  # untimed: see ``run`` on why rounds leave no files behind
        return statistics.median(wall), statistics.median(cpu)


# -- references ----------------------------------------------------------------------


def timed(op: Callable[[], object], *, batch: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            op()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples)


def sha_gcm(size: int, *, batch: int, rounds: int) -> float:
    data = payload(size).encode()
    cipher = AESGCM(os.urandom(32))
    aad = b"replay-enclave/v1/bench/sp/1/response//body"

    def op() -> None:
        hashlib.sha256(data).digest()
        cipher.encrypt(os.urandom(12), data, aad)

    return timed(op, batch=batch, rounds=rounds)


def bare_work(size: int, *, durable: bool, steps: int, folder: Path) -> float:
    """The work a capture step cannot avoid, written inline without the SDK: canonical
    bytes of both fields, their keyed digests and the two step digests, one timestamp,
    AES-GCM of both (the bench retains both encrypted), and the buffered write + fsync
    (per step when durable; otherwise writeback started every 4 MiB, as the payload
    store does, and one fsync at the end). Seconds per step — the floor for
    ``capture``."""
    import hmac

    body, key = payload(size), os.urandom(32)
    cipher, prefix, aad_r = AESGCM(os.urandom(32)), os.urandom(4), b"response//body"
    with open(folder / f"bare-{size}-{durable}.ct", "ab", buffering=1 << 20) as out:
        start, written_back = time.perf_counter(), 0
        for seq in range(steps):
            request, response = orjson.dumps("bench query"), orjson.dumps(body)
            d1 = hmac.new(key, request, hashlib.sha256).hexdigest()
            d2 = hmac.new(key, response, hashlib.sha256).hexdigest()
            hmac.new(key, orjson.dumps({"/query": d1}), hashlib.sha256).hexdigest()
            hmac.new(key, orjson.dumps({"/body": d2}), hashlib.sha256).hexdigest()
            datetime.now(UTC).isoformat()
            for n, (field, aad) in enumerate(((request, b"request//query"), (response, aad_r))):
                nonce = prefix + (2 * seq + n).to_bytes(8, "big")
                out.write(nonce + cipher.encrypt(nonce, field, b"aad/%d/" % seq + aad))
            if durable:
                out.flush()
                os.fsync(out.fileno())
            elif hasattr(os, "posix_fadvise") and out.tell() - written_back >= 4 << 20:
                out.flush()
                os.posix_fadvise(out.fileno(), written_back, 0, os.POSIX_FADV_DONTNEED)
                written_back = out.tell()
        out.flush()
        os.fsync(out.fileno())
        elapsed = time.perf_counter() - start
    (folder / f"bare-{size}-{durable}.ct").unlink()
    return elapsed / steps


def ledger_append() -> dict[str, float] | None:
    try:
        from benchmarks._ledger_append import measure
    except ImportError:
        return None
    return measure()


# -- report ----------------------------------------------------------------------------


class OtelSpan:
    """One span with five attributes through a BatchSpanProcessor that drops spans."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class DropExporter(SpanExporter):
            def export(self, spans: Sequence[Any]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

            def shutdown(self) -> None:
                return None

        self._provider = TracerProvider()
        self._provider.add_span_processor(BatchSpanProcessor(DropExporter()))
        tracer = self._provider.get_tracer("bench")
        attributes: dict[str, str | int] = {
            "tool.name": "bench-tool",
            "tool.call_id": "main/bench-tool#0",
            "step.seq": 1,
            "payload.digest": "hmac-sha256:" + "ab" * 32,
            "payload.bytes": 4096,
        }

        def op() -> None:
            with tracer.start_as_current_span("bench-tool", attributes=attributes):
                pass

        self.op = op

    def per_span(self, *, batch: int) -> tuple[float, float]:
        """(batch spans + force_flush) / batch, wall and process CPU: the processor's
        export work (its thread counts in process CPU) is billed to the spans that
        caused it, as the seal's write + fsync is billed to the capture steps."""
        op = self.op
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(batch):
            op()
        self._provider.force_flush()
        return (time.perf_counter() - start) / batch, (time.process_time() - start_cpu) / batch

    def close(self) -> None:
        self._provider.shutdown()


def run(*, quick: bool) -> dict[str, Any]:
    """Capture, its crypto floor and the OTel span are measured in alternating rounds,
    so a busy machine slows all three alike; each figure is the median of its rounds.

    Each round deletes what it wrote once its timing is taken. Left in place, a run's
    hundreds of megabytes of page cache make later rounds pay for the kernel's
    writeback and reclaim of earlier ones (measured: 4 KiB capture 14.5 µs/step with
    deletion, 22 µs without, on the same machine) — a property of the machine's memory
    state, not of one step's capture, and one the OTel span never meets."""
    rounds = 5 if quick else 11
    batched_steps = {256: 2000, 4096: 2000, 65536: 300}
    durable_steps = 50 if quick else 150
    results: dict[str, Any] = {"rows": []}
    try:
        span: OtelSpan | None = OtelSpan()
    except ImportError:
        span = None
    with tempfile.TemporaryDirectory(prefix="capture-bench-") as tmp:
        bench = CaptureBench(Path(tmp) / "home")
        try:
            bench.per_step(4096, durable=False, steps=500, rounds=1)  # warm up
            if span is not None:
                span.per_span(batch=2000)
            for size in SIZES:
                for mode, durable, steps in (
                    ("batched", False, batched_steps[size]),
                    ("durable", True, durable_steps),
                ):
                    cap_w, cap_c, floor_s, bare_s, otel_w, otel_c = [], [], [], [], [], []
                    for _ in range(rounds):
                        wall, cpu = bench.per_step(size, durable=durable, steps=steps, rounds=1)
                        cap_w.append(wall)
                        cap_c.append(cpu)
                        floor_s.append(sha_gcm(size, batch=1000, rounds=1))
                        bare_s.append(
                            bare_work(size, durable=durable, steps=steps, folder=Path(tmp))
                        )
                        if span is not None:
                            wall, cpu = span.per_span(batch=10000)
                            otel_w.append(wall)
                            otel_c.append(cpu)
                    med = statistics.median
                    results["rows"].append(
                        {
                            "size": size,
                            "mode": mode,
                            "capture": med(cap_w),
                            "capture_cpu": med(cap_c),
                            "floor": med(floor_s),
                            "bare": med(bare_s),
                            "otel": med(otel_w) if otel_w else None,
                            "otel_cpu": med(otel_c) if otel_c else None,
                        }
                    )
        finally:
            bench.close()
            if span is not None:
                span.close()
    results["ledger"] = ledger_append()
    return results


# -- payload stores: database vs files ---------------------------------------------------

STORE_TARGET = 1.5  # database store per step <= 1.5 x the file store, every row


WARM_WAL_MIB = 384  # above the WAL one comparison writes (~300 MiB)


@contextmanager
def bench_database(url: str | None, *, warm_wal: bool = True) -> Iterator[str]:
    """``url`` as given, or a throwaway local PostgreSQL (fsync on) with an empty
    database, its WAL warmed unless ``warm_wal`` is false (``warm_server_wal``)."""
    if url is not None:
        yield url
        return
    from tests.fixtures.postgres import running_postgres

    with running_postgres(durable=True) as server:
        server.admin('CREATE DATABASE "bench"')
        if warm_wal:
            warm_server_wal(server.url("bench"), mebibytes=WARM_WAL_MIB)
        yield server.url("bench")


def warm_server_wal(url: str, *, mebibytes: int) -> None:
    """Write ``mebibytes`` of WAL and checkpoint, so the run reuses recycled WAL segments
    as a server that has been running does. A fresh cluster instead creates and
    zero-fills a 16 MiB segment for every 16 MiB of WAL it writes, which on a 2-core
    machine made a 1 MiB chunk insert take 5.5-7.3 ms instead of 3.3-4.0 ms."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("SET synchronous_commit TO off")
            conn.exec_driver_sql("CREATE TABLE wal_warmup (n int, b bytea)")
            conn.exec_driver_sql("ALTER TABLE wal_warmup ALTER COLUMN b SET STORAGE EXTERNAL")
            block = os.urandom(1 << 20)
            insert = "INSERT INTO wal_warmup VALUES (%(n)s, %(b)s)"
            for n in range(mebibytes):
                conn.exec_driver_sql(insert, {"n": n, "b": block})
            conn.exec_driver_sql("DROP TABLE wal_warmup")
            conn.exec_driver_sql("CHECKPOINT")
    finally:
        engine.dispose()


STEP_FRAME_BYTES = 96  # a step's frames beyond the payload: request field, nonces, tags


def stored_alone_in_files(size: int, *, durable: bool, steps: int, folder: Path) -> float:
    """The storage alone: a step's bytes appended to a file as the file store does (a
    1 MiB buffer; fsync per step when durable, else once at the end), no capture work.
    Seconds per step."""
    block, path = os.urandom(size + STEP_FRAME_BYTES), folder / "alone.ct"
    with open(path, "ab", buffering=1 << 20) as out:
        start = time.perf_counter()
        for _ in range(steps):
            out.write(block)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        out.flush()
        os.fsync(out.fileno())
        elapsed = time.perf_counter() - start
    path.unlink()
    return elapsed / steps


class StoredAloneInDatabase:
    """The storage alone in the database: a step's bytes inserted as the database store
    inserts its chunks (one autocommit ``INSERT`` of a ``bytea`` stored out of line,
    uncompressed; per step with ``synchronous_commit`` on when durable, else ~1 MiB at a
    time with it off and the last with it on), from one thread, no capture work."""

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        self._engine = sa.create_engine(url)
        self._conn = self._engine.raw_connection()
        self._conn.driver_connection.autocommit = True  # type: ignore[union-attr]
        self._cursor = self._conn.driver_connection.cursor()  # type: ignore[union-attr]
        self._cursor.execute("CREATE TABLE alone (n int PRIMARY KEY, b bytea NOT NULL)")
        self._cursor.execute("ALTER TABLE alone ALTER COLUMN b SET STORAGE EXTERNAL")

    def per_step(self, size: int, *, durable: bool, steps: int) -> float:
        from enclave.store._db_payloads import CHUNK_BYTES

        block, insert = os.urandom(size + STEP_FRAME_BYTES), "INSERT INTO alone VALUES (%s, %s)"
        buffer, number, synchronous = bytearray(), 0, True
        start = time.perf_counter()
        for step in range(steps):
            buffer += block
            if durable or len(buffer) >= CHUNK_BYTES or step == steps - 1:
                if synchronous != (durable or step == steps - 1):  # as the store: on change
                    synchronous = not synchronous
                    self._cursor.execute(f"SET synchronous_commit TO {synchronous}")
                self._cursor.execute(insert, (number, bytes(buffer)))
                buffer, number = bytearray(), number + 1
        elapsed = time.perf_counter() - start
        self._cursor.execute("TRUNCATE alone")
        return elapsed / steps

    def close(self) -> None:
        self._cursor.execute("DROP TABLE alone")
        self._conn.close()
        self._engine.dispose()


def compare_stores(*, quick: bool, ledger_url: str | None, warm_wal: bool = True) -> dict[str, Any]:
    """Per-step capture (steps + seal) with the file store and with the database store,
    alternating round by round; medians."""
    from enclave._home import ledger_location

    rounds = 5 if quick else 9
    batched_steps = {256: 2000, 4096: 2000, 65536: 300}
    durable_steps = 50 if quick else 150
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="payload-bench-") as tmp,
        bench_database(ledger_url, warm_wal=warm_wal) as url,
    ):
        files = CaptureBench(Path(tmp) / "files", env={"REPLAY_ENCLAVE_PAYLOAD_STORE": "files"})
        database = CaptureBench(
            Path(tmp) / "database",
            env={"REPLAY_ENCLAVE_PAYLOAD_STORE": "database", "REPLAY_ENCLAVE_LEDGER_URL": url},
        )
        alone = StoredAloneInDatabase(url)
        try:
            for bench in (files, database):  # warm up
                bench.per_step(4096, durable=False, steps=500, rounds=1)
            for size in SIZES:
                for mode, durable, steps in (
                    ("batched", False, batched_steps[size]),
                    ("durable", True, durable_steps),
                ):
                    on_files, on_db, alone_files, alone_db = [], [], [], []
                    for _ in range(rounds):
                        on_files.append(
                            files.per_step(size, durable=durable, steps=steps, rounds=1)[0]
                        )
                        on_db.append(
                            database.per_step(size, durable=durable, steps=steps, rounds=1)[0]
                        )
                        alone_files.append(
                            stored_alone_in_files(
                                size, durable=durable, steps=steps, folder=Path(tmp)
                            )
                        )
                        alone_db.append(alone.per_step(size, durable=durable, steps=steps))
                    med = statistics.median
                    f, d = med(on_files), med(on_db)
                    af, ad = med(alone_files), med(alone_db)
                    rows.append(
                        {
                            "size": size,
                            "mode": mode,
                            "files": f,
                            "database": d,
                            "ratio": d / f,
                            "alone_files": af,
                            "alone_database": ad,
                            "alone_ratio": ad / af,
                        }
                    )
        finally:
            alone.close()
            files.close()
            database.close()
    wal = "given server" if ledger_url else ("warm WAL" if warm_wal else "fresh cluster's WAL")
    return {"database": f"{ledger_location(url)}, {wal}", "rows": rows}


def print_store_table(results: dict[str, Any]) -> None:
    print(
        f"payload store per capture step, microseconds (medians): database = {results['database']}"
    )
    print("(storage alone: the same bytes per step written or inserted, no capture work)")
    header = (
        f"{'row':>17} {'files':>9} {'database':>9} {'db / files':>11}"
        f" | {'storage alone: files':>21} {'database':>9} {'db / files':>11}"
    )
    print(header)
    print("-" * len(header))
    for r in results["rows"]:
        label = row_label(r["size"], r["mode"])
        print(
            f"{label:>17} {r['files'] * 1e6:>9.1f} {r['database'] * 1e6:>9.1f} "
            f"{r['ratio']:>10.2f}x | {r['alone_files'] * 1e6:>21.1f} "
            f"{r['alone_database'] * 1e6:>9.1f} {r['alone_ratio']:>10.2f}x"
        )
    worst = max(r["ratio"] for r in results["rows"])
    verdict = "met" if worst <= STORE_TARGET else "MISSED"
    print(
        f"\ntarget: database store <= {STORE_TARGET:.1f}x the file store: "
        f"worst {worst:.2f}x -> {verdict}"
    )


def print_table(results: dict[str, Any]) -> None:
    def us(value: float | None, digits: int = 1) -> str:
        return "n/a" if value is None else f"{value * 1e6:.{digits}f}"

    def ratio(a: float, b: float | None) -> str:
        return "n/a" if not b else f"{a / b:.2f}x"

    print("capture overhead per step, microseconds (medians; cpu = process CPU time)")
    header = (
        f"{'row':>17} {'capture':>9} {'cpu':>7} {'sha+gcm':>8} {'bare work':>10} "
        f"{'otel span':>10} {'cpu':>6} {'vs sha+gcm':>11} {'vs otel':>8} {'cpu vs otel':>12}"
    )
    print(header)
    print("-" * len(header))
    for r in results["rows"]:
        label = row_label(r["size"], r["mode"])
        print(
            f"{label:>17} {us(r['capture']):>9} {us(r['capture_cpu']):>7} "
            f"{us(r['floor'], 2):>8} {us(r['bare']):>10} "
            f"{us(r['otel']):>10} {us(r['otel_cpu']):>6} "
            f"{ratio(r['capture'], r['floor']):>11} {ratio(r['capture'], r['otel']):>8} "
            f"{ratio(r['capture_cpu'], r['otel_cpu']):>12}"
        )
    target = next(r for r in results["rows"] if r["size"] == TARGET_SIZE and r["mode"] == "batched")
    if target["otel"] is None:
        print("\ntarget: opentelemetry-sdk is not installed, no span to compare with")
    else:
        wall_ratio = target["capture"] / target["otel"]
        cpu_ratio = target["capture_cpu"] / target["otel_cpu"]
        verdict = "met" if wall_ratio <= TARGET_RATIO else "MISSED"
        print(
            f"\ntarget: batched capture at {TARGET_SIZE} B <= {TARGET_RATIO:.1f}x one OTel span: "
            f"wall {wall_ratio:.2f}x -> {verdict} (cpu {cpu_ratio:.2f}x)"
        )
    ledger = results["ledger"]
    print()
    if ledger is None:
        print("ledger append: benchmarks/_ledger_append.py not present, row skipped")
    else:
        print(
            f"{ROWS[-1]}: {ledger['ledger_append_many_rows_per_s']:,.0f} rows/s hash-linked "
            f"(raw sqlite3 executemany {ledger['raw_sqlite3_executemany_rows_per_s']:,.0f} rows/s, "
            f"ratio {ledger['ratio']:.2f}, {ledger['rows']:,.0f} rows)"
        )


def profile() -> None:
    with tempfile.TemporaryDirectory(prefix="capture-profile-") as tmp:
        bench = CaptureBench(Path(tmp) / "home")
        try:
            bench.per_step(TARGET_SIZE, durable=False, steps=500, rounds=1)
            profiler = cProfile.Profile()
            profiler.enable()
            bench.per_step(TARGET_SIZE, durable=False, steps=5000, rounds=1)
            profiler.disable()
        finally:
            bench.close()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="cProfile batched 4 KiB steps")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument(
        "--payloads",
        choices=("files", "database", "both"),
        default="files",
        help="files: the capture table; database: database vs file store; both: the two",
    )
    parser.add_argument(
        "--ledger-url",
        default=None,
        help="database for --payloads database|both (default: a local PostgreSQL)",
    )
    parser.add_argument(
        "--cold-wal",
        action="store_true",
        help="the local PostgreSQL's WAL unwarmed: every 16 MiB of it creates a segment",
    )
    args = parser.parse_args()
    if args.profile:
        profile()
        return
    if args.payloads in ("files", "both"):
        print_table(run(quick=args.quick))
    if args.payloads in ("database", "both"):
        if args.payloads == "both":
            print()
        print_store_table(
            compare_stores(quick=args.quick, ledger_url=args.ledger_url, warm_wal=not args.cold_wal)
        )


if __name__ == "__main__":
    main()
