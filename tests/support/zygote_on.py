"""Pytest plugin: run every test with zygotes active (``pytest -p tests.support.zygote_on``).

Inside a test, every ``Sandbox.start`` that a zygote may serve (``enclave.sandbox._zygote``)
forks its worker from one, as in ``replay-enclave worker``; the zygotes are closed after
the test. Used to run the sandbox, boundary and isolation suites with zygotes on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from enclave.sandbox import Zygotes


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    pool = Zygotes()
    with pool.activated():
        yield
    pool.close()
