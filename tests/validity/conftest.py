"""One enclave home per test module: the known-answer suites capture and audit in it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from enclave import Home, Runtime


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path_factory.mktemp("validity") / "home"))
    yield rt
    rt.close()
