"""Fixtures shared by the tests of tests/broker/: pytest finds a fixture in this folder's conftest.py,
so a test module names it as a parameter without importing it."""
from __future__ import annotations

from tests.support.broker_support import broker  # noqa: F401  (the `broker` fixture, registered here for this folder)
