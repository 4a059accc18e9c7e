"""Shared pytest configuration.

Integration tests may skip only outside CI: when the CI variable is set, a skip
of a test marked `integration` is turned into a failure.
"""
from __future__ import annotations

import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and item.get_closest_marker("integration"):
        report.outcome = "failed"
        report.longrepr = f"integration test skipped under CI (every skip is a failure there): {report.longrepr}"


def pytest_collection_modifyitems(config, items):
    """Tests that need root or Docker build namespaces, containers or sshd servers: they belong
    to the slow set, so the fast set (-m "not slow") stays under two minutes."""
    for item in items:
        if item.get_closest_marker("root") or item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.slow)
