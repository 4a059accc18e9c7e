"""harness/processes/forked.py: a forked child's result and errors come back to its
parent; a child whose parent is killed dies with it (Linux)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencepost.harness.processes.forked import ChildTraceback, Forked
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration


def _fail(message: str) -> None:
    raise ValueError(message)


def test_a_child_sends_back_its_result_or_its_exception():
    assert Forked("a sum", sum, [1, 2, 3]).result() == 6
    with pytest.raises(ValueError, match="bad value") as raised:
        Forked("a failure", _fail, "bad value").result()
    assert isinstance(raised.value.__cause__, ChildTraceback)
    assert "_fail" in str(raised.value.__cause__)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever reaps it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_dies_with_its_parent_killed_by_sigkill():
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         f"sys.path.insert(0, {str(ROOT)!r})\n"
         "from fencepost.harness.processes.forked import Forked\n"
         "child = Forked('a sleeper', time.sleep, 120)\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), f"the child {child} outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
        parent.stdout.close()
