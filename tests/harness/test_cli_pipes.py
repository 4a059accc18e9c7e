"""A reader that goes away (`fencepost run | head -1`) must not stop a command half-way:
writes are dropped, the command ends as it would have (exit code, files), and a run still
heals and tears its cluster down (a progress line at the start of teardown used to raise
BrokenPipeError and leave the whole cluster behind)."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys

import pytest

from fencepost.harness.processes.pipes import PipeSafe
from tests.support.paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


class Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_writes_after_the_reader_left_are_dropped_and_remembered():
    safe = PipeSafe(Closed())
    assert safe.write("verdict: valid\n") == len("verdict: valid\n")
    assert safe.broken
    safe.flush()  # no error either
    live = PipeSafe(io.StringIO())
    live.write("x")
    assert live.stream.getvalue() == "x" and not live.broken and live.isatty() is False


def test_check_with_its_output_closed_ends_with_its_verdict_and_no_traceback(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ROOT / "examples" / "kip101-scenario-1", run)
    (run / "results.json").unlink(missing_ok=True)
    checking = subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "check", str(run)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=ENV)
    checking.stdout.close()  # the reader is gone before the first line
    error = checking.stderr.read().decode()
    assert checking.wait(timeout=60) == 1, error  # invalid, as with a reader (not 255)
    assert "Traceback" not in error and (run / "results.json").is_file()


@pytest.mark.integration
@pytest.mark.root
@pytest.mark.slow
def test_a_run_whose_reader_left_still_tears_its_cluster_down(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    running = subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "run", "--time-limit", "4",
                                "--name", "piped", "--backend-option", "subnet=10.77.64.0/24"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, cwd=tmp_path, env=ENV)
    first = running.stdout.readline().decode()
    running.stdout.close()  # as `| head -1` does
    code = running.wait(timeout=300)
    assert first.startswith("fencepost: setup") and code in (0, 1, 2), (first, code)
    run_dir = next((tmp_path / "results" / "piped").glob("2*"))
    assert (run_dir / "results.json").is_file() and (run_dir / "final.jsonl").is_file()
    cluster = f"run-{run_dir.name[-6:]}"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not re.search(rf"fp-{cluster}-", namespaces), namespaces
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(run_dir) not in processes
