"""Fixtures shared by the tests of tests/clusters/: pytest finds a fixture in this folder's conftest.py,
so a test module names it as a parameter without importing it."""
from __future__ import annotations

from tests.support.lazyfs_support import lazy  # noqa: F401  (the `lazy` fixture, registered here for this folder)
