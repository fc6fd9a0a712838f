"""Grant cost against a local OpenBao dev server this script starts (and stops) itself.

Measures, in one run on the same server:

- bare ``transit/decrypt`` of one wrapped data key (root token, not wrapped) — the floor;
- one job's grant: ``issue_grant`` (wrapped decrypt, creation path checked on its
  response) + ``redeem`` (unwrap);
- HTTP requests per job, counted on the client's transport, and audit-log request
  entries per job, counted on the server side.

Run: ``python benchmarks/grants.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from enclave.keys._transit import TransitKeyProvider, derivation_context
from enclave.keys._vault_client import VaultSession, VaultSettings, admin_client
from enclave.vaultops import apply_setup, start_dev_server, stop_server

# the table's rows, in order (tests/project/test_docs.py checks the ones docs/benchmarks.md cites)
ROWS = (
    "bare transit/decrypt (root, unwrapped)",
    "issue_grant (wrapped decrypt)",
    "redeem (unwrap)",
    "grant per job (issue + redeem)",
)


class CountingAdapter(HTTPAdapter):
    """Counts every HTTP request that leaves the client."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent += 1
        return super().send(request, *args, **kwargs)


def counted_session() -> tuple[requests.Session, CountingAdapter]:
    session = requests.Session()
    adapter = CountingAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session, adapter


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def audit_requests(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if json.loads(line).get("type") == "request")


def main() -> int:
    parser = argparse.ArgumentParser(description="grant latency and round trips")
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grants-bench-") as home:
        server = start_dev_server(Path(home), root_token=secrets.token_hex(16), write_state=False)
        try:
            return run(server.addr, server.root_token, server.audit_log, args.jobs)
        finally:
            stop_server(server)


def run(addr: str, root_token: str, audit_log: Path, jobs: int) -> int:
    tenant = "bench"
    root = admin_client(addr, root_token)
    setup = apply_setup(root, tenants=[tenant])

    def settings(role: Any) -> VaultSettings:
        cred = setup.credentials_for(role)
        return VaultSettings(addr=addr, role_id=cred.role_id, secret_id=cred.secret_id)

    capture = TransitKeyProvider(settings=settings("capture"))
    http, counter = counted_session()
    broker_session = VaultSession(settings("broker"), http=http)
    broker = TransitKeyProvider(client_factory=broker_session.client)
    broker_session.client()  # log in before measuring

    specimens = [f"spec-{i}" for i in range(jobs)]
    keys = {s: capture.new_data_key(tenant, s) for s in specimens}

    def bare_decrypt(specimen: str) -> None:
        wrapped = keys[specimen][1]
        root.adapter.post(
            f"/v1/transit/decrypt/{wrapped.kek_id}",
            json={"ciphertext": wrapped.blob, "context": derivation_context(tenant, specimen)},
        )

    def one_job(specimen: str, job: str, timings: list[list[float]] | None) -> bool:
        plain, wrapped = keys[specimen]
        now = datetime.now(UTC)
        t0 = time.perf_counter()
        grant = broker.issue_grant(tenant, specimen, wrapped, job_id=job, ttl_seconds=60, now=now)
        t1 = time.perf_counter()
        got = grant.redeem(now=now)
        t2 = time.perf_counter()
        if timings is not None:
            timings[0].append(t1 - t0)
            timings[1].append(t2 - t1)
            timings[2].append(t2 - t0)
        return got == plain

    for specimen in specimens[:20]:  # warm both paths
        bare_decrypt(specimen)
        one_job(specimen, "warm", None)

    # interleave so both paths see the same server state and machine load
    bare: list[float] = []
    timings: list[list[float]] = [[], [], []]
    audit_before = audit_requests(audit_log)
    counter.sent = 0
    for specimen in specimens:
        t0 = time.perf_counter()
        bare_decrypt(specimen)
        bare.append(time.perf_counter() - t0)
        if not one_job(specimen, f"job-{specimen}", timings):
            print("a grant returned the wrong key", file=sys.stderr)
            return 1
    audit_per_job = (audit_requests(audit_log) - audit_before) / jobs - 1  # minus the bare one
    http_per_job = counter.sent / jobs

    issue, redeem, total = timings
    ratio = median_ms(total) / median_ms(bare)
    figures = (
        (median_ms(bare), "1"),
        (median_ms(issue), "1"),
        (median_ms(redeem), "1"),
        (median_ms(total), f"{http_per_job:g}"),
    )
    rows = [(name, *figure) for name, figure in zip(ROWS, figures, strict=True)]
    print(f"OpenBao dev server on loopback, {jobs} jobs, medians")
    print(f"{'operation':<42}{'median ms':>11}{'HTTP req':>10}")
    for name, value, count in rows:
        print(f"{name:<42}{value:>11.2f}{count:>10}")
    print(f"grant / bare decrypt: {ratio:.2f}x (target <= 3x)")
    print(
        f"per job: {http_per_job:g} HTTP requests on the broker's transport, "
        f"{audit_per_job:g} audit-log requests (target <= 2): the wrapped decrypt and the unwrap"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
