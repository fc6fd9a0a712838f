"""Shared fixtures: real servers are started by plugin modules in ``tests/fixtures``."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.support import loopback

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.openbao", "tests.fixtures.homes"]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP listener on the host (see ``tests/support/loopback.py``)."""
    sock = loopback.listener()
    yield sock
    sock.close()
