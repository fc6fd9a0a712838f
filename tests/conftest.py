"""Shared fixtures: real servers are started by plugin modules in ``tests/fixtures``."""

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.openbao"]
