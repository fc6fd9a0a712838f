"""The service's list routes at scale, on a real SQLite home: keyset pages through an
opaque cursor (a malformed one is a 400 that echoes nothing), the clearance wall of
``/audits`` applied in SQL so pages stay full, a bounded number of statements whatever
the number of specimens, ``/whoami`` answering while a burst of slow listings runs on a
real server, and verification resuming from its checkpoint (route and command)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime, utc_now
from enclave.governance import add_analyst
from enclave.jobs import submit_audit
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.service import LIST_THREADS, REQUEST_THREADS, create_app
from ledger import Classification, SpecimenSummary
from ledger.transactions import POOL_SIZE
from tests.support.cli_runner import run_cli
from tests.support.reads_world import CLASSES, seal_many, synthetic_specimen

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

API = "/api/v1"
ROLES = {
    "vera": ("acme", ["viewer", "restricted-clearance"]),
    "nora": ("acme", ["auditor"]),  # no clearance: restricted audits are walled off
    "opal": ("acme", ["operator"]),
}


class Site:
    def __init__(self, home: Home, tokens: dict[str, str], client: TestClient) -> None:
        self.home, self.tokens, self.client = home, tokens, client

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def get(self, path: str, who: str = "vera") -> Any:
        return self.client.get(API + path, headers=self.auth(who))

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.client.app.state.enclave.runtime  # type: ignore[attr-defined]
        return runtime


def _request(specimen_id: str) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester="nora",
        samples=4,
        seed=1,
    )


def _home(root: Path, specimens: int) -> tuple[Home, dict[str, str]]:
    home = Home.init(root)
    with Runtime.open(home, env={}) as runtime:
        seal_many(runtime.ledger, specimens)
        tokens = {}
        for name, (tenant, roles) in ROLES.items():
            _, tokens[name] = add_analyst(runtime, name, tenant=tenant, roles=roles, now=utc_now())
    return home, tokens


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    home, tokens = _home(tmp_path_factory.mktemp("reads") / "home", 30)
    with Runtime.open(home, env={}) as runtime:
        # one audit per specimen of the first 16: four of each classification
        for n in range(16):
            submit_audit(
                runtime,
                _request(f"sp-syn-{n:06d}"),
                tenant_id="acme",
                now=datetime(2025, 3, 1, 12, 0, n, tzinfo=UTC),
            )
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        yield Site(home, tokens, client)


# -- one specimen summary -------------------------------------------------------------------


def test_the_cli_and_the_service_list_the_same_summaries(site: Site) -> None:
    """``specimens list --json`` and ``GET /specimens`` print one projection: the same
    keys and values for the same specimens, the summary's own fields and nothing else."""
    listed = run_cli(site.home.root, "specimens", "list", "--json", "--tenant", "acme")
    assert listed.returncode == 0, listed.stderr
    from_cli = json.loads(listed.stdout)[:5]
    from_service = site.get("/specimens?limit=5").json()["items"]
    assert len(from_cli) == 5
    assert from_cli == from_service
    keys = [f.name for f in fields(SpecimenSummary)]
    assert all(sorted(item) == sorted(keys) for item in from_cli)
    # the detail opens with the same summary
    detail = site.get(f"/specimens/{from_cli[0]['specimen_id']}").json()
    assert {k: detail[k] for k in keys} == from_cli[0]


def test_the_openapi_summary_is_the_ledgers_summary(site: Site) -> None:
    schemas = site.client.get("/openapi.json").json()["components"]["schemas"]
    keys = {f.name for f in fields(SpecimenSummary)}
    assert set(schemas["SpecimenSummaryModel"]["properties"]) == keys
    assert set(schemas["SpecimenSummaryModel"]["required"]) == keys
    assert keys <= set(schemas["SpecimenDetail"]["properties"])
    assert schemas["Classification"]["enum"] == [c.value for c in Classification]


# -- cursors -------------------------------------------------------------------------------


def _b64(value: object) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


CANARY = "CANARY-CURSOR-7f3a"
MALFORMED = [
    CANARY,
    "",
    "!!!",
    _b64(["specimens", 3]) + "==",  # padded: not the one spelling
    _b64(["specimens", -1]),
    _b64(["specimens", "3"]),
    _b64(["specimens", 3.0]),
    _b64(["specimens", True]),
    _b64(["audits", "2025-03-01T12:00:00.000000Z", "au-1"]),  # another list's cursor
    _b64(["specimens", 3, CANARY]),
    _b64({"specimens": 3}),
    _b64(b'["specimens", 3]'),  # not canonical
    _b64(b"\xff\xfe"),
    _b64([CANARY]),
    "A" * 5000,
]


@pytest.mark.parametrize("cursor", MALFORMED)
def test_a_malformed_specimens_cursor_is_one_400_that_echoes_nothing(
    site: Site, cursor: str
) -> None:
    response = site.get(f"/specimens?cursor={cursor}")
    assert response.status_code == 400, response.text
    assert response.json() == {
        "error": {"code": "bad_cursor", "message": "the cursor is not one this service issued"}
    }


@pytest.mark.parametrize(
    "cursor",
    [
        CANARY,
        _b64(["specimens", 3]),
        _b64(["audits", "2025-03-01T12:00:00Z", "au-1"]),  # not the fixed-width time
        _b64(["audits", "2025-03-01T12:00:00.000000Z", "../x"]),
        _b64(["audits", "2025-03-01T12:00:00.000000Z", CANARY + "'"]),
        _b64(["audits", "2025-03-01T12:00:00.000000Z", 7]),
    ],
)
def test_a_malformed_audits_cursor_is_one_400_that_echoes_nothing(site: Site, cursor: str) -> None:
    response = site.get(f"/audits?cursor={cursor}", who="nora")
    assert response.status_code == 400
    assert CANARY not in response.text and response.json()["error"]["code"] == "bad_cursor"


# -- keyset pages --------------------------------------------------------------------------


def _walk(site: Site, path: str, who: str, limit: int, between: Any = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = f"{path}?limit={limit}" + ("" if cursor is None else f"&cursor={cursor}")
        page = site.get(query, who=who).json()
        assert set(page) == {"items", "limit", "next", "total"} and page["limit"] == limit
        items += page["items"]
        if between is not None:
            between()
        cursor = page["next"]
        if cursor is None:
            return items


def test_pages_hold_every_specimen_once_while_new_ones_are_sealed(site: Site) -> None:
    existing = {s["specimen_id"] for s in site.get("/specimens?limit=500").json()["items"]}
    counter = iter(range(1000))

    def seal_one() -> None:
        n = next(counter)
        site.runtime.ledger.seal_specimen(synthetic_specimen(f"sp-late-{n:04d}"))

    seen = [s["specimen_id"] for s in _walk(site, "/specimens", "vera", 4, between=seal_one)]
    assert len(seen) == len(set(seen)) == len(existing)
    assert set(seen) == existing


def test_audit_pages_stay_full_under_the_clearance_wall(site: Site) -> None:
    walled = _walk(site, "/audits", "nora", 5)
    cleared = _walk(site, "/audits", "vera", 5)
    restricted = {f"sp-syn-{n:06d}" for n in range(16) if CLASSES[n % 4].value == "restricted"}
    assert len(cleared) == 16 and len(walled) == 12
    assert not {a["audit_id"] for a in walled} - {a["audit_id"] for a in cleared}
    with site.runtime.ledger.engine.connect() as conn:
        of_restricted = {
            r[0]
            for r in conn.execute(
                sa.text("SELECT id FROM audits WHERE specimen_id IN :s").bindparams(
                    sa.bindparam("s", expanding=True)
                ),
                {"s": sorted(restricted)},
            )
        }
    assert not {a["audit_id"] for a in walled} & of_restricted
    first = site.get("/audits?limit=5", who="nora").json()
    assert len(first["items"]) == 5 and first["total"] == 12  # a page is never short
    assert [a["created_at"] for a in cleared] == sorted(
        (a["created_at"] for a in cleared), reverse=True
    )


# -- statements do not grow with the data ------------------------------------------------


def _statements(site: Site, path: str) -> list[str]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
        seen.append(sql)

    engine = site.runtime.ledger.engine
    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        assert site.get(path).status_code == 200
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return seen


def test_a_filtered_listing_costs_the_same_at_ten_times_the_specimens(site: Site) -> None:
    path = "/specimens?auditability=observable-only&agent=claims&limit=5"
    small = _statements(site, path)
    seal_many(site.runtime.ledger, 300, prefix="sp-more")
    large = _statements(site, path)
    assert small == large
    lists = [sql for sql in large if "FROM specimens" in sql]
    assert len(lists) == 2  # the page (LIMIT) and its count
    assert all("LIMIT" in sql.upper() for sql in lists if "count(*)" not in sql)


# -- verification from the checkpoint -------------------------------------------------------


def test_ledger_verify_resumes_from_its_checkpoint(site: Site) -> None:
    first = site.get("/ledger/verify", who="opal").json()
    assert first["ok"]
    site.runtime.ledger.append("note", "n", {"n": 1})
    again = site.get("/ledger/verify", who="opal").json()
    assert again["ok"] and again["verified_from"] == first["length"]
    full = site.get("/ledger/verify?full=true", who="opal").json()
    assert full["ok"] and full["verified_from"] == 0
    assert site.get("/ledger/verify", who="vera").status_code == 403


def test_the_verify_command_resumes_and_full_rereads(tmp_path: Path) -> None:
    home, _ = _home(tmp_path / "home", 3)
    first = json.loads(run_cli(home.root, "ledger", "verify", "--json").stdout)
    with Runtime.open(home, env={}) as runtime:
        runtime.ledger.append("note", "n", {"n": 1})
    resumed = run_cli(home.root, "ledger", "verify", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["verified_from"] == first["length"]
    full = json.loads(run_cli(home.root, "ledger", "verify", "--full", "--json").stdout)
    assert full["ok"] and full["verified_from"] == 0


# -- a burst of listings does not starve /whoami ----------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _served(home: Home) -> Iterator[tuple[Any, str, httpx.Client]]:
    """The service app on a real uvicorn server: (app, API url, one client for all)."""
    app = create_app(lambda: Runtime.open(home, env={}))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    # one client for every request: making one per request costs CPU these tests must not
    client = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=100))
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        yield app, f"http://127.0.0.1:{port}{API}", client
    finally:
        client.close()
        server.should_exit = True
        thread.join(timeout=30)


def test_whoami_answers_while_45_slow_listings_run(tmp_path: Path) -> None:
    home, tokens = _home(tmp_path / "home", 10)
    headers = {"Authorization": f"Bearer {tokens['vera']}"}
    with _served(home) as (app, url, client):
        assert client.get(f"{url}/whoami", headers=headers).status_code == 200

        def slow(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
            if "FROM specimens" in sql:
                time.sleep(1.0)  # a slow listing query, holding its thread and connection

        engine = app.state.enclave.runtime.ledger.engine
        sa.event.listen(engine, "before_cursor_execute", slow)
        try:
            with ThreadPoolExecutor(max_workers=45) as pool:
                listings = [
                    pool.submit(client.get, f"{url}/specimens", headers=headers) for _ in range(45)
                ]
                time.sleep(0.5)  # the burst is in
                started = time.monotonic()
                me = client.get(f"{url}/whoami", headers=headers)
                waited = time.monotonic() - started
                statuses = [f.result().status_code for f in listings]
        finally:
            sa.event.remove(engine, "before_cursor_execute", slow)
        assert me.status_code == 200
        assert waited < 0.75, f"/whoami waited {waited:.2f} s behind the listings"
        assert statuses == [200] * 45


def test_a_burst_of_reads_holds_no_more_connections_than_the_pool_keeps(tmp_path: Path) -> None:
    """40 slow detail reads at once: the request threads are bounded, so the connections
    in use never exceed what the pool keeps, and none is opened past it (on PostgreSQL
    each would be a backend started and stopped per request)."""
    home, tokens = _home(tmp_path / "home", 10)
    headers = {"Authorization": f"Bearer {tokens['vera']}"}
    with _served(home) as (app, url, client):
        engine = app.state.enclave.runtime.ledger.engine
        lock, in_use, peak, opened = threading.Lock(), [0], [0], [0]

        def checkout(*_: Any) -> None:
            with lock:
                in_use[0] += 1
                peak[0] = max(peak[0], in_use[0])

        def checkin(*_: Any) -> None:
            with lock:
                in_use[0] -= 1

        def connect(*_: Any) -> None:
            with lock:
                opened[0] += 1

        def slow(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
            if "FROM specimens" in sql:
                time.sleep(0.3)  # a slow read, holding its thread and connection

        listeners = [
            (engine.pool, "checkout", checkout),
            (engine.pool, "checkin", checkin),
            (engine.pool, "connect", connect),
            (engine, "before_cursor_execute", slow),
        ]
        for target, name, fn in listeners:
            sa.event.listen(target, name, fn)
        try:
            with ThreadPoolExecutor(max_workers=40) as pool:
                reads = [
                    pool.submit(client.get, f"{url}/specimens/sp-syn-{n % 10:06d}", headers=headers)
                    for n in range(40)
                ]
                statuses = [f.result().status_code for f in reads]
        finally:
            for target, name, fn in listeners:
                sa.event.remove(target, name, fn)
        assert statuses == [200] * 40
        assert 2 <= peak[0] <= REQUEST_THREADS + LIST_THREADS <= POOL_SIZE
        assert engine.pool.checkedin() + in_use[0] <= POOL_SIZE
        assert opened[0] <= POOL_SIZE


def test_the_verify_headline_names_only_what_it_checked(tmp_path: Path) -> None:
    """An edited row before the checkpoint is not reread by a resumed run: the headline
    must say which entries it checked and that the older ones were not, never that the
    whole ledger verified."""
    home, _ = _home(tmp_path / "home", 3)
    first = run_cli(home.root, "ledger", "verify")
    assert first.returncode == 0, first.stderr
    length = json.loads(run_cli(home.root, "ledger", "verify", "--json").stdout)["length"]
    assert f"all {length} entries (0-{length - 1}) checked" in first.stdout
    with Runtime.open(home, env={}) as runtime:
        with runtime.ledger.engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE ledger_entries SET body_json = :v WHERE entry_index = 1"),
                {"v": '{"specimen_id":"forged"}'},
            )
        runtime.ledger.append("note", "n", {"n": 1})
    resumed = run_cli(home.root, "ledger", "verify")
    assert resumed.returncode == 0, resumed.stderr
    line = " ".join(resumed.stdout.split())
    assert f"entry {length} checked" in line
    assert f"entries 0-{length - 1} were verified at an earlier checkpoint" in line
    assert "re-checked only with --full" in line
    assert f"{length + 1} entries" not in line.split("checked")[0]  # no whole-ledger claim
    quiet = " ".join(run_cli(home.root, "ledger", "verify").stdout.split())
    assert "no entries after the checkpoint" in quiet and "--full" in quiet
    full = run_cli(home.root, "ledger", "verify", "--full")
    assert full.returncode == 1 and "FAILED at index 1" in full.stdout
