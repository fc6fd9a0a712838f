"""Refusals that translate another library's error keep no link to it.

``raise ... from None`` only hides the handled error from a printed traceback: it stays
the new error's ``__context__``. A requests error keeps the request it failed on (the
worker token in its header), a JSON decode error keeps the whole document (``doc``: a
grant service's answer, with its keys), hvac's keeps Vault's answer. Whatever reaches
a log handler, an error reporter or a debugger must not lead to those."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import requests

from enclave import GrantRefused, InfrastructureError
from enclave.keys import GrantServiceUnavailable, KeyServerUnavailable, ServiceGrants, vault_errors
from tests.support.served import free_port
from tests.unit.ledger.test_ledger import error_chain

TOKEN = "CANARY-worker-token-41c2"
KEY = "CANARY-digest-key-9e07"


@pytest.fixture
def broken_json_service() -> Iterator[str]:
    """Answers every POST 200 with a cut JSON document holding a key."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = ('{"tenant_id": "acme", "digest_key": "' + KEY).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _link(service_url: str) -> ServiceGrants:
    return ServiceGrants(
        service_url=service_url,
        worker_token=TOKEN,
        vault_addr="http://127.0.0.1:1",
        timeout=5.0,
    ).for_job("job-1", 1)  # type: ignore[return-value]


def _assert_unlinked(error: BaseException) -> None:
    assert error_chain(error) == [error]
    assert TOKEN not in repr(error) and KEY not in repr(error)


def test_a_grant_service_out_of_reach_is_no_link_to_the_request() -> None:
    with pytest.raises(GrantServiceUnavailable) as info:
        _link(f"http://127.0.0.1:{free_port()}")._ask()  # type: ignore[attr-defined]
    _assert_unlinked(info.value)


def test_a_grant_service_answer_cut_short_is_no_link_to_the_answer(
    broken_json_service: str,
) -> None:
    with pytest.raises(GrantServiceUnavailable) as info:
        _link(broken_json_service)._ask()  # type: ignore[attr-defined]
    _assert_unlinked(info.value)


def _unreachable() -> None:
    requests.post(
        f"http://127.0.0.1:{free_port()}/v1/transit/decrypt/k",
        headers={"X-Vault-Token": TOKEN},
        json={"ciphertext": KEY},
        timeout=5,
    )


def _bad_answer() -> None:
    raise ValueError(KEY)


@pytest.mark.parametrize(
    ("failure", "translated"),
    [(_unreachable, KeyServerUnavailable), (_bad_answer, InfrastructureError)],
    ids=["unreachable", "bad-answer"],
)
def test_a_key_server_failure_is_no_link_to_the_request_or_answer(
    failure: Callable[[], None], translated: type[Exception]
) -> None:
    with pytest.raises(translated) as info, vault_errors("decrypt", refusal=GrantRefused):
        failure()
    _assert_unlinked(info.value)
