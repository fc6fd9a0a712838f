"""A fresh home with the reference incidents captured, for the governance tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from enclave import Home, Runtime
from enclave.cli import capture_incidents


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path / "home"), env={})
    yield rt
    rt.close()


@pytest.fixture
def captured(runtime: Runtime) -> dict[str, str]:
    return capture_incidents(runtime)
