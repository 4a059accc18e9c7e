"""Stock Kafka runs in tests: the skips where it cannot run (no Java or Maven; the netns
backend without root) and `fencepost check` of what a run recorded, so that a verdict comes
from the run's files alone."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from tests.support.cli import fencepost


def needs_java_and_maven() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"stock Kafka needs {tool} (scripts/provision installs it)")


def needs_root_and_java() -> None:
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    needs_java_and_maven()


def rechecked(run_dir: Path) -> dict:
    """`fencepost check` of what the run recorded: the verdict comes from the files alone."""
    done = fencepost(run_dir.parent, "check", str(run_dir), timeout=300)
    assert done.returncode in (0, 1), (done.stdout, done.stderr[-2000:])
    return orjson.loads((run_dir / "results.json").read_bytes())
